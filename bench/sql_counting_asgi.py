"""The platform's ASGI application, counting the SQL statements the process sends.

For ``bench/web_hot_path.py`` only: daphne serves ``bench.sql_counting_asgi:application``
instead of ``agent_platform.asgi:application``, and ``GET /__bench__/sql`` answers
``{"count": N, "recent": [...]}`` (statements since the start, and the text of those
since the last ask) without touching the database or Django.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
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
    if scope["type"] == "http" and scope["path"] in ("/__bench__/sql", "/__bench__/profile"):
        if scope["path"] == "/__bench__/profile":
            _dump_profile(urllib.parse.unquote(scope["query_string"].decode()))
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


# BENCH_PROFILE=1: every thread of the process is profiled with cProfile on its own CPU
# clock (time.thread_time, so waits do not count), from the start; GET
# /__bench__/profile?PATH writes the statistics so far, all threads merged, to PATH (and
# the main thread's, the event loop's, to PATH.main).
_profilers: list[Any] = []


def _profile_this_thread(*_: Any) -> None:
    import cProfile
    import sys
    import time

    sys.setprofile(None)
    profiler = cProfile.Profile(time.thread_time)
    _profilers.append(profiler)
    profiler.enable()


if os.environ.get("BENCH_PROFILE"):
    threading.setprofile(_profile_this_thread)
    _profile_this_thread()


class _Snapshot:
    def __init__(self, profiler: Any) -> None:
        profiler.snapshot_stats()  # without stopping it: it may belong to another thread
        self.stats = profiler.stats

    def create_stats(self) -> None:
        pass


def _dump_profile(path: str) -> None:
    import pstats

    profilers = list(_profilers)
    if profilers:
        pstats.Stats(_Snapshot(profilers[0])).dump_stats(f"{path}.main")  # the event loop's thread alone
        snapshots = [snapshot for snapshot in map(_Snapshot, profilers) if snapshot.stats]  # pstats refuses empty ones
        pstats.Stats(*snapshots).dump_stats(path)
