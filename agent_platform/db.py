"""Database work from async code, for code that runs for as long as a stream stays open."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
R = TypeVar("R")


def on_pool(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``func`` run on the event loop's shared thread pool, not one thread per caller.

    Like channels' ``database_sync_to_async``, the worker thread's database
    connection is given back per ``CONN_MAX_AGE`` (or when broken) before and
    after each call, so however many streams are open they hold at most one
    connection per pool thread. (Django's own ``close_old_connections`` is
    called rather than channels', which its test communicators stub out.)
    """

    @functools.wraps(func)
    def closing(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return func(*args, **kwargs)
        finally:
            close_old_connections()

    return sync_to_async(closing, thread_sensitive=False)
