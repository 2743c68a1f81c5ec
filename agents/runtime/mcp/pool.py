"""Live sessions with MCP servers, pooled per process.

Every session lives on one event loop of its own, in a daemon thread started on first
use: a turn worker runs many turns on one loop, web requests and hooks run on loops
that ``async_to_sync`` makes and closes per call, and an MCP session (its stdio
process, its HTTP client, the ``mcp`` SDK's task groups) must outlive all of them.
Callers on any loop ``await`` the pool; the work runs on the pool's loop, and a caller
that is cancelled cancels its request there.

A session is opened on the first call for its ``ServerSpec`` and reused after. One that
dies (the server exits or closes the connection) is noticed when its stream ends and
opened afresh on the next call; one that does not answer within the timeout is closed
(a stdio server is killed: stdin closed, then SIGTERM, then SIGKILL), so a hanging
server never keeps a call, or the next one, waiting. A server that cannot be started or
reached is not tried again for ``RETRY_AFTER`` seconds: each turn lists the tools of its
agent's servers, and a dead one must not cost every turn its timeout.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Tool

from agents.runtime.outbound import OutboundPolicy, OutboundRefused, guarded_client

logger = logging.getLogger(__name__)

T = TypeVar("T")

MAX_SESSIONS = 64  # the least recently used beyond this are closed
RETRY_AFTER = 5.0  # a server that failed to start is not tried again sooner (every turn lists)
# Starting a server gets at least this long (seconds), whatever a short call timeout
# says: a stdio server's imports alone can take seconds on a busy machine.
START_TIMEOUT_FLOOR = 10.0
MAX_TOOL_PAGES = 10


class McpUnavailable(Exception):
    """The server could not be reached, or its session ended; ``str()`` says why."""


class McpTimeout(McpUnavailable):
    """The server did not answer in time (its session was closed)."""


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server as the pool connects to it: secrets already resolved."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    policy: OutboundPolicy = field(default_factory=OutboundPolicy)


class _ReadWatch:
    """The transport's read stream, telling the session when it ends (the server went away)."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner, self._ended = inner, ended

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._ended.set()
            raise

    def __aiter__(self) -> _ReadWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _ReadWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


@asynccontextmanager
async def _transport(spec: ServerSpec, ended: asyncio.Event) -> AsyncIterator[Any]:
    async with AsyncExitStack() as stack:
        if spec.command is not None:
            params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=spec.cwd)
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            assert spec.url is not None
            spec.policy.check_url(spec.url)  # again at connect time: config may have changed since
            http = guarded_client(spec.policy, headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            await stack.enter_async_context(http)
            read, write = await stack.enter_async_context(streamable_http_client(spec.url, http_client=http))
        yield _ReadWatch(read, ended), write


def _reason(error: BaseException) -> str:
    """The first real failure inside the task groups' exception groups, as one line."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    cause = error.__cause__ or error.__context__
    if isinstance(error, MCPError) and isinstance(cause, OutboundRefused):
        error = cause
    if isinstance(error, httpx2.HTTPError) and not str(error):
        return type(error).__name__
    return f"{type(error).__name__}: {error}" if not isinstance(error, OutboundRefused) else f"refused: {error}"


class _Live:
    """One session with a server, owned by one task on the pool's loop (the ``mcp`` SDK's
    task groups must be left by the task that entered them)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.client: Client | None = None
        self.tools: list[Tool] | None = None
        self.failure: str | None = None
        self.ready = asyncio.Event()
        self.ended = asyncio.Event()  # the server went away, or close() was asked
        self.task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{spec.name}")

    async def _own(self) -> None:
        try:
            async with Client(_transport(self.spec, self.ended), cache=None) as client:
                self.client = client
                self.ready.set()
                await self.ended.wait()
        except Exception as error:  # noqa: BLE001  any failure of the server is this session's end
            self.failure = _reason(error)
        finally:
            self.ended.set()
            self.ready.set()
            self.client = None

    @property
    def alive(self) -> bool:
        return not self.ended.is_set()

    def close(self) -> None:
        self.ended.set()


class McpPool:
    """The process's MCP sessions, one per ``ServerSpec``."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._sessions: OrderedDict[ServerSpec, _Live] = OrderedDict()
        self._failed: dict[ServerSpec, tuple[float, str]] = {}

    def _pool_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                # A forked child (a prefork worker) has the parent's loop but not its thread.
                self._sessions, self._failed = OrderedDict(), {}
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-pool", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
                atexit.register(self.close_all)
            return self._loop

    async def _on_pool(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        loop = self._pool_loop()
        if asyncio.get_running_loop() is loop:
            return await work()
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work(), loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()  # the request on the pool's loop stops too
            raise

    async def _session(self, spec: ServerSpec, timeout: float) -> _Live:
        loop = asyncio.get_running_loop()
        failed = self._failed.get(spec)
        if failed is not None and loop.time() - failed[0] < RETRY_AFTER:
            raise McpUnavailable(failed[1])  # down a moment ago: the caller does not wait again
        live = self._sessions.get(spec)
        if live is None or not live.alive:
            live = _Live(spec)
            self._sessions[spec] = live
            while len(self._sessions) > MAX_SESSIONS:
                _, oldest = self._sessions.popitem(last=False)
                oldest.close()
        self._sessions.move_to_end(spec)
        start_within = max(timeout, START_TIMEOUT_FLOOR)
        try:
            await asyncio.wait_for(live.ready.wait(), start_within)
        except TimeoutError:
            live.close()
            reason = f"the server did not start within {start_within:g} s"
            self._failed[spec] = (loop.time(), reason)
            raise McpTimeout(reason) from None
        if live.client is None:
            reason = live.failure or "the server closed the connection"
            self._failed[spec] = (loop.time(), reason)
            raise McpUnavailable(reason)
        self._failed.pop(spec, None)
        return live

    async def _request(self, spec: ServerSpec, timeout: float, ask: Callable[[Client], Awaitable[T]]) -> T:
        live = await self._session(spec, timeout)
        assert live.client is not None
        try:
            return await asyncio.wait_for(ask(live.client), timeout)
        except TimeoutError:
            live.close()  # kills a stdio server; the next call starts a fresh one
            raise McpTimeout(f"no answer within {timeout:g} s; the server was stopped") from None
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001  whatever the SDK raised for this server
            if not live.alive or (isinstance(error, MCPError) and error.code == -32000):  # CONNECTION_CLOSED
                live.close()
                raise McpUnavailable(f"the server went away: {live.failure or _reason(error)}") from None
            raise McpUnavailable(_reason(error)) from None

    async def list_tools(self, spec: ServerSpec, timeout: float) -> list[Tool]:
        """The server's tools (listed once per session).

        Raises:
            McpUnavailable: it cannot be reached or did not list in time.
        """

        async def work() -> list[Tool]:
            live = await self._session(spec, timeout)
            if live.tools is None:
                live.tools = await self._request(spec, timeout, _all_tools)
            return live.tools

        return await self._on_pool(work)

    async def call_tool(self, spec: ServerSpec, tool: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """The server's result of one call (``is_error`` set when the tool failed).

        Raises:
            McpUnavailable: it cannot be reached, went away, or did not answer in time.
        """
        return await self._on_pool(lambda: self._request(spec, timeout, lambda c: c.call_tool(tool, arguments)))

    def close_all(self) -> None:
        """Close every session (at exit: stdio servers are stopped, not left behind)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        async def shut() -> None:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            for live in sessions:
                live.close()
            await asyncio.gather(*(live.task for live in sessions), return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=10)
        except Exception:
            logger.warning("closing MCP sessions at exit failed", exc_info=True)


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


POOL = McpPool()

__all__ = ["POOL", "McpPool", "McpTimeout", "McpUnavailable", "ServerSpec"]
