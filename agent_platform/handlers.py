"""Django's ASGI handler, with each request's synchronous work done in one trip to a thread.

Django's own ASGI handler makes a new thread for every request and crosses between it
and the event loop several times per request: to send ``request_started``, to run the
middleware (all of ours are synchronous), back to the loop to resolve the URL, to the
thread again for the (synchronous, DRF) view, and once more to close the response.
Each crossing wakes a thread and the loop; together with the thread's start and join
they cost more CPU than a small API request itself. This handler runs the middleware
chain synchronously, as under WSGI, and does a request's synchronous part (the
``request_started`` signal, the middleware and view, and closing a plain response,
which sends ``request_finished`` and gives the database connection back) in one call
on a long-lived thread of ``REQUEST_THREADS``; the event loop only reads the body and
sends the response. At most ``PLATFORM["REQUEST_SLOTS"]`` requests do that at once, and
one tenant (known by its bearer token) at most its share of them
(``REQUEST_TENANT_SHARE``): a tenant sending many requests at once waits for its own
earlier ones, and another tenant's request goes in beside them. Of those, only
``REQUEST_RUNNING`` run at a time, by the same share (the event streams' reads take the
same places): threads beyond that only share the one interpreter lock, and a newcomer's
request would wait for each of them at every step of its own. One still running after
``REQUEST_STEP_ASIDE_SECONDS`` is waiting on something, and gives its place back; one
that knows it is about to wait for another request gives it back at once
(``waiting_on_another_request``).

A streamed response (an event stream) keeps no thread either: its database connection
is given back before it starts streaming, and the bit of synchronous work left at its
very end (closing it) is another trip to the same threads.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from asgiref.sync import SyncToAsync, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.db import close_old_connections
from django.http import FileResponse, HttpRequest
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix

from agent_platform.auth import remembered_tenant
from agent_platform.conf import platform_settings
from sessions_app.fair_slots import FairSlots

R = TypeVar("R")

# Requests whose synchronous part runs at the same time. More than the database pool
# (DB_POOL_SIZE, 16 by default): a request waiting for a connection holds its thread,
# and requests that need none (a 401, a 404) should not queue behind those.
MAX_REQUEST_THREADS = 64
REQUEST_THREADS = ThreadPoolExecutor(max_workers=MAX_REQUEST_THREADS, thread_name_prefix="request")

_request_slots: FairSlots | None = None
_running_slots: FairSlots | None = None


_TENANT = "tenant"


def tenant_key(tenant_id: int) -> Hashable:
    """Whom a tenant's requests and streams count for among the request and running slots."""
    return (_TENANT, tenant_id)


def whose_request(scope: dict[str, Any]) -> Hashable:
    """Whom a request counts for among the request slots: its token's tenant when known
    without reading the database; otherwise (a first request, a signed-in browser, a
    bad token) the address it came from."""
    tenant = remembered_tenant(scope)
    if tenant is not None:
        return tenant_key(tenant)
    client = scope.get("client")
    return ("address", client[0] if client else None)


def request_slots() -> FairSlots:
    """The process's request slots (``PLATFORM["REQUEST_SLOTS"]``): how many requests'
    synchronous parts run at once, and how many of them one tenant may hold."""
    global _request_slots  # one per process, made on first use (settings are read by then)
    if _request_slots is None:
        _request_slots = FairSlots(platform_settings.REQUEST_SLOTS, platform_settings.REQUEST_TENANT_SHARE, capped=True)
    return _request_slots


def running_slot(whose: Hashable) -> AbstractAsyncContextManager[Callable[[], None]]:
    """A place among the process's running slots (``PLATFORM["REQUEST_RUNNING"]``), for
    a request's synchronous part or a stream's read: how many run at once, tenants in
    turn. One still running after ``REQUEST_STEP_ASIDE_SECONDS`` is waiting on
    something, and gives its place to the next."""
    global _running_slots  # one per process, made on first use (settings are read by then)
    if _running_slots is None:
        running, share = platform_settings.REQUEST_RUNNING, platform_settings.REQUEST_TENANT_SHARE
        _running_slots = FairSlots(running, share, capped=True)
    if not (isinstance(whose, tuple) and whose[0] == _TENANT):
        # Of no known tenant (a signed-in browser, a token's first request): each counts
        # alone here. Behind a proxy they all come from one address, which must not hold
        # them to one at a time; the request slots already bound how many an address has in.
        whose = object()
    return _running_slots.slot(whose, platform_settings.REQUEST_STEP_ASIDE_SECONDS)


# What gives the current request's running place back, from its thread (None outside one).
_give_back_running_place: contextvars.ContextVar[Callable[[], object] | None] = contextvars.ContextVar(
    "give_back_running_place", default=None
)


def waiting_on_another_request() -> None:
    """Called from a request's synchronous part that is about to wait for another
    request (an idempotent retry for its first attempt's answer): its running place goes
    to the next request now, not after ``REQUEST_STEP_ASIDE_SECONDS``. Nothing outside a
    request."""
    give_back = _give_back_running_place.get()
    if give_back is not None:
        give_back()


def release_request_thread() -> None:
    """End the current request's thread-sensitive thread (asgiref's per-context
    executor) now, if the request made one.

    asgiref keeps it in ``SyncToAsync.context_to_thread_executor`` under the
    request's ``ThreadSensitiveContext``; without an entry there, its next
    thread-sensitive call starts a new one, which the context ends on exit.
    """
    context = SyncToAsync.thread_sensitive_context.get(None)
    executor = SyncToAsync.context_to_thread_executor.pop(context, None) if context is not None else None
    if executor is not None:
        executor.shutdown(wait=False)  # its thread is idle: the view has returned


async def on_request_thread(func: Callable[..., R], *args: Any) -> R:
    """``func(*args)`` on one of the request threads (with the caller's context)."""
    return await sync_to_async(func, thread_sensitive=False, executor=REQUEST_THREADS)(*args)


class StreamingASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        BaseHandler.__init__(self)  # not ASGIHandler.__init__, which builds the async chain
        self.load_middleware(is_async=False)

    def respond(self, request: HttpRequest, scope: dict[str, Any]) -> HttpResponseBase:
        """The synchronous part of a request, on a request thread: the response, closed
        already unless it streams (then only its database connection is given back)."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        response = self.get_response(request)
        response._handler_class = self.__class__  # type: ignore[attr-defined]
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size
        if response.streaming:
            close_old_connections()
        else:
            response.close()  # request_finished: the connection goes back to the pool now
        return response

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Django's ``ASGIHandler.handle``, with the synchronous part in one call."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            assert error_response is not None
            body_file.close()
            await self.send_response(error_response, send)
            await on_request_thread(error_response.close)
            return

        async def process_request() -> HttpResponseBase:
            # One tenant's many requests wait for its earlier ones, not everyone's; of those
            # let in, a few run at once (more would only share one interpreter lock, and a
            # newcomer's request would wait for each of them at every step), tenants in turn.
            whose = whose_request(scope)
            loop = asyncio.get_running_loop()
            async with request_slots().slot(whose), running_slot(whose) as give_back:
                # Copied into the request thread's context (on_request_thread), for
                # waiting_on_another_request; the slots belong to this loop.
                _give_back_running_place.set(functools.partial(loop.call_soon_threadsafe, give_back))
                response = await on_request_thread(self.respond, request, scope)
            if response.streaming:
                release_request_thread()
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client went away while the response was sent
            return response

        # As Django does: a disconnect while the response is made cancels the making.
        listening = asyncio.create_task(self.listen_for_disconnect(receive))
        responding = asyncio.create_task(process_request())
        tasks: list[asyncio.Task[Any]] = [listening, responding]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        try:
            response = responding.result()
        except asyncio.CancelledError:
            # Cancelled while the view ran: respond() still finishes (and closes a plain
            # response) on its thread; a streamed one was never started.
            await on_request_thread(signals.request_finished.send, self.__class__)
        else:
            if response.streaming:
                await on_request_thread(response.close)
        body_file.close()
