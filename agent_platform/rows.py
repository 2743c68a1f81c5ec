"""Model rows read and written with hand-written SQL, for the few queries on the request hot path.

Building a query through the ORM costs about ten times what sending it does (Django
compiles it anew on every call: about 0.7 ms against 0.07 ms here), and a turn makes a
handful of the same small queries over and over. Where one of them is worth writing out,
``columns(Model, alias)`` gives its select list, every concrete field in order, and
``instance(Model, values)`` turns that part of a row back into a model instance as the
ORM would (field converters applied, e.g. JSON decoded); ``insert(*instances)`` writes
new rows in one statement, with the values ``save()`` would write; ``update(Model, pk,
**values)`` sets fields of one row as ``QuerySet.update`` would. Columns are read from
the model, so a field added later is read and written too. Postgres only: SQLite returns
some types (dates, booleans) raw, so callers keep their ORM query there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Field, Model
from django.db.models.fields import AutoFieldMixin

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
    names, converted = [], []
    for position, field in enumerate(model._meta.concrete_fields):
        names.append(field.attname)
        column, found = _field_converters(model, field)
        if found:
            converted.append((position, column, found))
    return names, converted


def _field_converters(model: type[Model], field: Field[Any, Any]) -> tuple[Any, list[Converter]]:
    """The field's column, and the converters the ORM's compiler applies to its values."""
    connection = connections[DEFAULT_DB_ALIAS]
    column = field.get_col(model._meta.db_table)
    return column, [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)]


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


@functools.cache
def converter(model: type[Model], name: str) -> Callable[[Any], Any]:
    """How a raw value of the column ``name`` becomes what the ORM gives (e.g. a JSON
    column's text decoded), for a query that selects a few columns only."""
    column, found = _field_converters(model, _field(model, name))

    def convert(value: Any) -> Any:
        connection = connections[DEFAULT_DB_ALIAS]
        for each in found:
            value = each(value, column, connection)
        return value

    return convert


def insert(*instances: Model) -> None:
    """INSERT these new rows, in this order, in one statement (one round trip), with
    the values ``save()`` would write (defaults, ``auto_now``, JSON adapted).

    Unlike ``save()``, it sends no ``pre_save``/``post_save`` signals and runs no
    ``save()`` override: callers keep the invariants those would check. Primary keys
    must be set already, or be automatic (an ``AutoField``: the database numbers the row,
    and since nothing is read back, no ``RETURNING``, the instance's ``pk`` stays None);
    foreign keys between the rows are fine, since the constraints are deferred to the commit.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    statements, params = [], []
    for row in instances:
        numbered = row.pk is None
        if numbered and not isinstance(row._meta.pk, AutoFieldMixin):
            raise ValueError(f"{type(row).__name__} has no primary key yet")
        statements.append(_insert_sql(type(row), numbered))
        fields = _inserted(type(row), numbered)
        params += [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    *first, last = statements
    ahead = ", ".join(f"w{n} AS ({statement})" for n, statement in enumerate(first))
    sql = f"WITH {ahead} {last}" if first else last
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    for row in instances:
        row._state.adding, row._state.db = False, DEFAULT_DB_ALIAS


@functools.cache
def _inserted(model: type[Model], numbered: bool) -> tuple[Field[Any, Any], ...]:
    """The columns an INSERT writes: every concrete field, less a key the database numbers."""
    return tuple(field for field in model._meta.concrete_fields if not (numbered and field.primary_key))


@functools.cache
def _insert_sql(model: type[Model], numbered: bool = False) -> str:
    """The INSERT of one row; ``numbered``: without the primary key, which the database gives."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    fields = _inserted(model, numbered)
    names = ", ".join(quote(str(field.column)) for field in fields)
    marks = ", ".join(["%s"] * len(fields))
    # The table and column names are the model's own; the values are parameters.
    return f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES ({marks})"  # noqa: S608


def update(model: type[Model], pk: Any, **values: Any) -> int:
    """``model.objects.filter(pk=pk).update(**values)`` in one written-out statement (the
    values adapted as the ORM adapts them: JSON, times); answers how many rows changed
    (0 or 1). Plain values only, no expressions; like ``QuerySet.update``, no signals."""
    connection = connections[DEFAULT_DB_ALIAS]
    names = tuple(values)
    params = [_field(model, name).get_db_prep_save(values[name], connection) for name in names]
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, names), [*params, pk])
        return int(cursor.rowcount)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field


@functools.cache
def _update_sql(model: type[Model], names: tuple[str, ...]) -> str:
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    assignments = ", ".join(f"{quote(str(_field(model, name).column))} = %s" for name in names)
    key = quote(str(_field(model, model._meta.pk.name).column))
    # The table and column names are the model's own; the values are parameters.
    return f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {key} = %s"  # noqa: S608
