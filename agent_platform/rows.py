"""Model instances from hand-written SQL, for the few queries on the request hot path.

Building a query through the ORM costs about ten times what sending it does (Django
compiles it anew on every call: about 0.7 ms against 0.07 ms here), and a turn makes a
handful of the same small queries over and over. Where one of them is worth writing out,
``columns(Model, alias)`` gives its select list, every concrete field in order, and
``instance(Model, values)`` turns that part of a row back into a model instance as the
ORM would (field converters applied, e.g. JSON decoded). Columns are read from the
model, so a field added later is read too. Postgres only: SQLite returns some types
(dates, booleans) raw, so callers keep their ORM query there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


def columns(model: type[Model], alias: str) -> str:
    """``alias."col", ...`` for each concrete field of ``model``, in field order."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    return ", ".join(f"{alias}.{quote(str(field.column))}" for field in model._meta.concrete_fields)


def width(model: type[Model]) -> int:
    """How many columns ``columns(model, ...)`` selects."""
    return len(model._meta.concrete_fields)


@functools.cache
def _layout(model: type[Model]) -> tuple[list[str], list[tuple[int, Any, list[Converter]]]]:
    """The field names of a row, and for each field that needs them, its converters
    (the ones the ORM's compiler applies: the backend's, then the field's own)."""
    connection = connections[DEFAULT_DB_ALIAS]
    names, converted = [], []
    for position, field in enumerate(model._meta.concrete_fields):
        names.append(field.attname)
        column = field.get_col(model._meta.db_table)
        found = [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)]
        if found:
            converted.append((position, column, found))
    return names, converted


def instance(model: type[M], values: Sequence[Any]) -> M:
    """A ``model`` instance from the values of ``columns(model, ...)``, as loaded from the database."""
    names, converted = _layout(model)
    row = list(values)
    if converted:
        connection = connections[DEFAULT_DB_ALIAS]
        for position, column, converters in converted:
            for convert in converters:
                row[position] = convert(row[position], column, connection)
    return model.from_db(DEFAULT_DB_ALIAS, names, row)
