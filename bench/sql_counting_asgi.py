"""The platform's ASGI application, counting the SQL statements the process sends.

For ``bench/web_hot_path.py`` only: daphne serves ``bench.sql_counting_asgi:application``
instead of ``agent_platform.asgi:application``, and ``GET /__bench__/sql`` answers
``{"count": N, "recent": [...]}`` (statements since the start, and the text of those
since the last ask) without touching the database or Django.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from django.db.backends import utils

from agent_platform.asgi import application as platform_application

_lock = threading.Lock()
_count = 0
_recent: list[str] = []
RECENT_KEPT = 2000


def _counted(method: Any) -> Any:
    def counting(self: Any, sql: Any, *args: Any, **kwargs: Any) -> Any:
        global _count
        with _lock:
            _count += 1
            if len(_recent) < RECENT_KEPT:
                _recent.append(" ".join(str(sql).split()))
        return method(self, sql, *args, **kwargs)

    return counting


utils.CursorWrapper._execute = _counted(utils.CursorWrapper._execute)  # type: ignore[method-assign]
utils.CursorWrapper._executemany = _counted(utils.CursorWrapper._executemany)  # type: ignore[method-assign]


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == "/__bench__/sql":
        with _lock:
            body = json.dumps({"count": _count, "recent": list(_recent)}).encode()
            _recent.clear()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return
    await platform_application(scope, receive, send)
