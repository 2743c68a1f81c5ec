"""Cursor pagination for every list of the management API.

A page is ``{"<items>": [...], "next": url | null, "previous": url | null}``: the list
keeps the key it always had (``tokens``, ``agents``, ...) and ``next`` is the absolute
URL of the following page (the same query with a ``cursor``). ``limit`` picks the page
size (1 to ``MAX_LIMIT``, default ``DEFAULT_LIMIT``), and is 400 out of range. A cursor
is opaque: one this API did not write names no page, 404 ``invalid_cursor`` (as DRF
answers), and is checked before it reaches the database.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from agent_platform.errors import ApiError

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# Longer than any position this API writes into a cursor (a timestamp, a slug).
MAX_POSITION_CHARS = 200
INVALID_CURSOR = "The cursor is not one this API wrote; start again without it."


def _text(value: str) -> str | None:
    return value


POSITION_PARSERS: dict[str, Callable[[str], date | datetime | str | None]] = {
    "text": _text,
    "date": parse_date,
    "datetime": parse_datetime,
}


class KeyedCursorPagination(CursorPagination):
    """DRF's cursor pagination with the list under ``results_key``, a strict ``limit``
    and a cursor that is checked before it reaches the database."""

    results_key = "results"
    position_type = "text"  # what the first ordering field holds: a key of POSITION_PARSERS
    page_size = DEFAULT_LIMIT
    page_size_query_param = "limit"
    max_page_size = MAX_LIMIT
    template = None

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
            raise ApiError(400, "invalid", f"limit must be an integer from 1 to {MAX_LIMIT}, not {raw[:40]!r}.")
        return int(raw)

    def decode_cursor(self, request: Request) -> Cursor | None:
        try:
            cursor = super().decode_cursor(request)
        except (NotFound, UnicodeError):
            raise ApiError(404, "invalid_cursor", INVALID_CURSOR) from None
        position = None if cursor is None else str(cursor.position) if cursor.position is not None else None
        if position is not None and (
            len(position) > MAX_POSITION_CHARS or "\x00" in position or _parsed(self.position_type, position) is None
        ):
            raise ApiError(404, "invalid_cursor", INVALID_CURSOR)
        return cursor

    def get_paginated_response(self, data: Any) -> Response:
        return Response({self.results_key: data, "next": self.get_next_link(), "previous": self.get_previous_link()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": ["string", "null"], "format": "uri"}
        return {
            "type": "object",
            "required": [self.results_key, "next", "previous"],
            "properties": {self.results_key: schema, "next": link, "previous": link},
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Where the page starts: the `cursor` of a `next` or `previous` link.",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Items per page (default {DEFAULT_LIMIT}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
            },
        ]


def _parsed(kind: str, position: str) -> object:
    try:
        return POSITION_PARSERS[kind](position)
    except ValueError:  # well formed but impossible, e.g. 2026-02-30
        return None


def cursor_pages(key: str, ordering: tuple[str, ...], position_type: str = "text") -> type[KeyedCursorPagination]:
    """A pagination class for one list: its items under ``key``, in ``ordering`` (the
    first field decides where a page starts; a unique field last keeps ties apart)."""
    return type(
        f"{key.title()}Pages",
        (KeyedCursorPagination,),
        {"results_key": key, "ordering": ordering, "position_type": position_type},
    )
