"""Django's ASGI handler, except that a streamed response does not keep a thread.

Django runs a request's sync code (middleware, sync views, signal receivers) on a
thread made for that request, and keeps that thread until the response is sent.
For an event stream that is as long as the client stays: every idle stream held
an idle thread, and its memory (about 70 KB RSS each at 1,000 streams), and the
database connection the view used (Django gives it back when the response is
closed), so a few dozen streams would empty the connection pool. Once the view
has returned a streaming response, this handler gives the connection back and
lets the thread go; the bit of sync work left at the very end (closing the
response) gets a new thread.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections
from django.http import HttpRequest
from django.http.response import HttpResponseBase


def release_request_thread() -> None:
    """End the current request's thread (asgiref's per-context executor) now.

    asgiref keeps it in ``SyncToAsync.context_to_thread_executor`` under the
    request's ``ThreadSensitiveContext``; without an entry there, its next
    thread-sensitive call starts a new one, which the context ends on exit.
    """
    context = SyncToAsync.thread_sensitive_context.get(None)
    executor = SyncToAsync.context_to_thread_executor.pop(context, None) if context is not None else None
    if executor is not None:
        executor.shutdown(wait=False)  # its thread is idle: the view has returned


class StreamingASGIHandler(ASGIHandler):
    async def run_get_response(self, request: HttpRequest) -> Any:
        response: HttpResponseBase = await super().run_get_response(request)
        if response.streaming:
            await sync_to_async(close_old_connections)()  # on the request's thread, which owns them
            release_request_thread()
        return response
