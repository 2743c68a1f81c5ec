"""The API's one body parser: JSON that can be stored as it came.

DRF's ``JSONParser`` accepts documents the rest of the platform cannot take: a
lone UTF-16 surrogate (``"\\ud800"``) or a NUL character, which Postgres refuses
in ``text`` and ``jsonb`` (a 500 after the request was accepted), and nesting deep
enough to overflow the decoder or any later recursive walk (``RecursionError``).
This parser refuses them up front with 400 ``parse_error``, so every view sees
storable, shallow data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 64


def unstorable_reason(data: Any, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why parsed JSON ``data`` cannot be accepted, or None when it can.

    Walks with an explicit stack, so a deep document cannot overflow Python's own.
    """
    pending: list[tuple[Any, int]] = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return "the JSON body contains a NUL character (\\u0000)"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "the JSON body contains an unpaired UTF-16 surrogate"
        elif isinstance(value, (dict, list)):
            if depth > max_depth:
                return f"the JSON body is nested deeper than {max_depth} levels"
            if isinstance(value, dict):
                pending.extend((key, depth) for key in value)
                pending.extend((item, depth + 1) for item in value.values())
            else:
                pending.extend((item, depth + 1) for item in value)
    return None


class StorableJSONParser(JSONParser):
    """``application/json`` that is valid, shallow, and free of NUL and lone surrogates."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(
                f"JSON parse error - the JSON body is nested deeper than {MAX_JSON_DEPTH} levels"
            ) from None
        reason = unstorable_reason(data)
        if reason is not None:
            raise ParseError(f"JSON parse error - {reason}")
        return data
