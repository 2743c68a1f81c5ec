"""Request ids and the access log.

Each HTTP request carries one id: the caller's ``X-Request-ID`` when it is a plain token
(``VALID``: letters, digits and ``._:/+=@-``, at most ``MAX_LENGTH`` characters), else a
new one (32 hex digits). A hostile value (a newline, markup, a megabyte) is replaced,
never logged. The id is echoed on the response as ``X-Request-ID``, is on every log
record made while the request is served (``RequestIdFilter``: ``record.request_id``), is
stored on the turns the request creates (``Turn.request_id``, whose default is
``current_request_id``), and a worker running that turn logs under it again
(``sessions_app.turn_worker``), so one id follows a message from the web request to the
worker's lines and to ``/<slug>/v1/logs``.

Work that does not start with an HTTP request gets an id of its own the same way: a
WebSocket connection (from its handshake's header), and a Celery task, which carries the
id of the context that sent it (``agent_platform.celery``: the hooks a turn's events
wake run under the turn's id) or, sent by beat (a schedule firing, a reminder sweep), a
new one that the turns it starts keep.

``request_id_and_access_log`` is the outermost middleware: it also writes one
``agent_platform.access`` line per request (method, path, status, duration in
milliseconds, request id) when ``ACCESS_LOG`` is on. For a streamed response the duration
is the time to its first byte (the headers), not the stream's length.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"
MAX_LENGTH = 100
VALID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:/+=@-]{{0,{MAX_LENGTH - 1}}}")

access_logger = logging.getLogger("agent_platform.access")

_current: ContextVar[str] = ContextVar("request_id", default="")


def current_request_id() -> str:
    """The id of the request (or the turn) being served in this context, or ""."""
    return _current.get()


def accepted_or_new(value: str | None) -> str:
    """``value`` when it is a valid request id, else a new one."""
    if value and VALID.fullmatch(value):
        return value
    return new_request_id()


def new_request_id() -> str:
    return uuid.uuid4().hex


def enter(value: str) -> Token[str]:
    """From here on in this context, ``value`` is the current id (``restore`` ends it)."""
    return _current.set(value)


def restore(token: Token[str]) -> None:
    _current.reset(token)


@contextmanager
def request_id(value: str) -> Iterator[None]:
    """Inside the block, what is logged (and any turn created) carries ``value``; ""
    leaves the current id as it is."""
    if not value:
        yield
        return
    token = _current.set(value)
    try:
        yield
    finally:
        _current.reset(token)


class RequestIdFilter(logging.Filter):
    """On the log handlers: ``record.request_id`` is the request's id ("" outside a
    request), unless the caller passed one as an extra."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = _current.get()
        return True


class PlainLines(logging.Formatter):
    """``LOG_FORMAT=plain``: ``time LEVEL logger [request id]: message``, without the
    brackets outside a request."""

    _with_request = logging.PercentStyle("%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        if getattr(record, "request_id", ""):
            return self._with_request.format(record)
        return super().formatMessage(record)


def _begin(request: HttpRequest) -> tuple[str, Any, float]:
    value = accepted_or_new(request.META.get(META_KEY))
    request.request_id = value  # type: ignore[attr-defined]
    return value, _current.set(value), time.perf_counter()


def _end(request: HttpRequest, response: HttpResponseBase, value: str, started: float) -> HttpResponseBase:
    response[HEADER] = value
    if settings.ACCESS_LOG:
        milliseconds = round((time.perf_counter() - started) * 1000, 1)
        access_logger.info(
            "%s %s %s %sms",
            request.method,
            request.path,
            response.status_code,
            milliseconds,
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": milliseconds,
            },
        )
    return response


@sync_and_async_middleware
def request_id_and_access_log(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Django middleware: the request's id (see the module docstring) in this context
    while the request is served, on the response, and on its access log line."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            value, token, started = _begin(request)
            try:
                pending: Awaitable[HttpResponseBase] = get_response(request)
                return _end(request, await pending, value, started)
            finally:
                _current.reset(token)

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        value, token, started = _begin(request)
        try:
            return _end(request, get_response(request), value, started)
        finally:
            _current.reset(token)

    return middleware
