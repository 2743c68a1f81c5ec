"""``AsyncClient``: the platform's HTTP API for asyncio (httpx.AsyncClient underneath);
the same methods as ``Client``, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any

import httpx

from agent_platform_client import _shared as s
from agent_platform_client._events import Event, StreamFormat, TurnResult, pending_approvals


class AsyncClient:
    """A connection to one platform, for any of its agents.

    Example::

        async with AsyncClient("https://agents.example.com", token="apt_...") as client:
            turn = await client.run("weather", "Weather in Lyon?")
            async for event in client.stream("weather", turn.session_id):
                ...

    ``max_reconnects``: how many drops in a row a stream survives without a new event
    (each reconnect resumes right after the last index received; the wait doubles
    from ``backoff`` seconds, at most 5 s). ``http``: an ``httpx.AsyncClient`` of your own
    (its base URL and auth are then yours to set).
    """

    def __init__(
        self,
        base_url: str = "",
        token: str | None = None,
        *,
        timeout: float = 30.0,
        stream_format: StreamFormat = "ndjson",
        max_reconnects: int = 5,
        backoff: float = 0.2,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        headers = {"User-Agent": s.user_agent(), "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        # Streams wait for events without bound; only connecting has a timeout.
        self.http = http or httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=httpx.Timeout(timeout, read=None)
        )
        self.stream_format: StreamFormat = stream_format
        self.max_reconnects = max_reconnects
        self.backoff = backoff

    async def close(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def _send(self, call: s.Call) -> Any:
        return s.decode(await self.http.send(s.request_of(self.http, call)))

    # --- sessions ---------------------------------------------------------------------

    async def start(
        self,
        slug: str,
        message: str,
        *,
        continuation_token: str | None = None,
        mode: str | None = None,
        title: str | None = None,
        purpose: str | None = None,
        dry_run: bool | None = None,
        workspace_files: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> s.Accepted:
        """``POST /<slug>/v1/session``: a new session (or, with ``continuation_token``,
        the next turn of that one).

        Raises:
            ApiError: 400 bad body, 404 unknown agent or token, 409 stale token, ...
        """
        call = s.start_call(
            slug,
            message,
            continuation_token=continuation_token,
            mode=mode,
            title=title,
            purpose=purpose,
            dry_run=dry_run,
            workspace_files=workspace_files,
            idempotency_key=idempotency_key,
        )
        return s.Accepted.from_body(await self._send(call))

    async def follow_up(
        self,
        slug: str,
        session_id: str,
        message: str,
        *,
        admission: s.Admission | None = None,
        workspace_files: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> s.Accepted:
        """``POST /<slug>/v1/session/:id``: the next message (202).

        Raises:
            ApiError: 409 ``session_busy`` (admission ``reject``) or a task session, ...
        """
        call = s.follow_up_call(
            slug,
            session_id,
            message,
            admission=admission,
            workspace_files=workspace_files,
            idempotency_key=idempotency_key,
        )
        return s.Accepted.from_body(await self._send(call))

    async def stop(self, slug: str, session_id: str) -> bool:
        """Interrupt the running turn; False when none was running."""
        return bool((await self._send(s.Call("POST", s.session_path(slug, session_id, "/stop"))))["stopped"])

    async def session(self, slug: str, session_id: str) -> dict[str, Any]:
        """The session's state (``status``, ``title``, ``eventCount``, ...)."""
        return dict(await self._send(s.Call("GET", s.session_path(slug, session_id))))

    async def sessions(
        self, slug: str, *, purpose: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The caller's sessions on the agent, newest first."""
        params = {key: value for key, value in {"purpose": purpose, "limit": limit}.items() if value is not None}
        return list((await self._send(s.Call("GET", s.agent_path(slug, "sessions"), params=params)))["sessions"])

    async def events(self, slug: str, session_id: str, start_index: int = 0) -> list[Event]:
        """The log so far from ``start_index``, every page of it."""
        found: list[Event] = []
        next_index: int | None = start_index
        while next_index is not None:
            page = await self._send(s.events_call(slug, session_id, next_index))
            found += [Event.from_record(record) for record in page["events"]]
            next_index = page["nextStartIndex"]
        return found

    async def stream(
        self, slug: str, session_id: str, start_index: int = 0, *, format: StreamFormat | None = None
    ) -> AsyncIterator[Event]:
        """The session's events from ``start_index``: the replay, then live ones, until
        ``session.completed`` / ``session.failed`` (a chat session's stream stays open:
        stop iterating when you have what you need).

        A dropped connection (a proxy's timeout, a restart) is resumed from the last
        index received, so each event comes once and none is missed.

        Raises:
            ApiError: the route refused (401, 403, 404, 400).
            StreamLost: ``max_reconnects`` drops in a row without a new event.
        """
        resume = s.Resume(
            slug, session_id, format or self.stream_format, start_index - 1, self.max_reconnects, self.backoff
        )
        while not resume.finished:
            cause: BaseException | None = None
            try:
                async with self.http.stream(**s.stream_args(resume.call())) as response:
                    if response.status_code in s.RETRY_STATUSES:
                        await response.aread()
                        cause = s.error_of(response)
                    elif not response.is_success:
                        await response.aread()
                        raise s.error_of(response)
                    else:
                        decoder = s.Decoder.for_response(response)
                        async for text in response.aiter_text():
                            for event in decoder.feed(text):
                                if resume.accept(event):
                                    yield event
                            if resume.finished:
                                return
                        for event in decoder.close():
                            if resume.accept(event):
                                yield event
            except s.DROPS as error:
                cause = error
            if not resume.finished:
                await asyncio.sleep(resume.dropped(cause))

    async def wait_turn(
        self,
        slug: str,
        turn: s.Accepted | TurnResult,
        start_index: int | None = None,
        *,
        on_event: Callable[[Event], Awaitable[None] | None] | None = None,
        format: StreamFormat | None = None,
    ) -> TurnResult:
        """Follow the turn ``turn`` names (what ``start``/``follow_up`` answered, or a
        ``TurnResult`` parked on an approval you decided since) until it completes, fails
        or asks for an approval (``status`` says which). The stream starts at
        ``start_index`` (default: 0, or where the ``TurnResult`` stopped); ``on_event``
        sees each of the turn's events as it arrives (``message.appended`` deltas included).
        """
        watch = s.TurnWatch.of(turn)
        start = start_index if start_index is not None else watch.next_index
        async for event in self.stream(slug, watch.accepted.session_id, start, format=format):
            settled = watch.take(event)
            if on_event is not None and event.turn_id == watch.accepted.turn_id:
                waited = on_event(event)
                if waited is not None:
                    await waited
            if settled:
                break
        return watch.result()

    async def run(
        self,
        slug: str,
        message: str,
        *,
        session_id: str | None = None,
        on_event: Callable[[Event], Awaitable[None] | None] | None = None,
        format: StreamFormat | None = None,
        **options: Any,
    ) -> TurnResult:
        """Send ``message`` (a new session, or a follow-up of ``session_id``) and follow
        its turn (``wait_turn``). ``options`` go to ``start`` or ``follow_up``."""
        if session_id is None:
            accepted = await self.start(slug, message, **options)
            return await self.wait_turn(slug, accepted, 0, on_event=on_event, format=format)
        # The turn's events come after what the log holds now.
        start_index = int((await self.session(slug, session_id))["eventCount"])
        accepted = await self.follow_up(slug, session_id, message, **options)
        return await self.wait_turn(slug, accepted, start_index, on_event=on_event, format=format)

    # --- approvals ----------------------------------------------------------------------

    async def pending_approvals(self, slug: str, session_id: str) -> list[dict[str, Any]]:
        """The calls waiting for a decision: ``[{"callId", "toolName", "args", "turnId"}]``."""
        return pending_approvals(await self.events(slug, session_id))

    async def decide(
        self, slug: str, session_id: str, call_id: str, decision: s.Decision, reason: str | None = None
    ) -> dict[str, Any]:
        """Approve or deny a call; its turn resumes.

        Raises:
            ApiError: 409 decided already, 404 no such call waiting.
        """
        return dict(await self._send(s.decide_call(slug, session_id, call_id, decision, reason)))

    # --- tools ----------------------------------------------------------------------------

    async def tools(self, slug: str) -> list[dict[str, Any]]:
        """The agent's tools with their schemas."""
        body = await self._send(s.Call("GET", s.agent_path(slug, "tools")))
        return list(body["tools"] if isinstance(body, dict) else body)

    async def call_tool(
        self,
        slug: str,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        continuation_token: str | None = None,
    ) -> dict[str, Any]:
        """Run a server tool with no model turn: ``{ok, toolName, callId, isError, result, durationMs}``.

        Raises:
            ApiError: 404 unknown tool, 400 bad input, 409 busy session or approval required.
        """
        return dict(await self._send(s.tool_call(slug, name, arguments or {}, session_id, continuation_token)))

    # --- evals ----------------------------------------------------------------------------

    async def eval_cases(self, slug: str) -> dict[str, Any]:
        """``{"datapoints": [{"id", "description", "tags"}], "config": {...}}``."""
        return dict(await self._send(s.Call("GET", s.agent_path(slug, "dev/evals"))))

    async def start_eval_run(
        self, slug: str, *, filter_ids: list[str] | None = None, tags: list[str] | None = None
    ) -> dict[str, Any]:
        """Start a run (its snapshot).

        Raises:
            ApiError: 404 no case matches, 409 ``eval_run_running``.
        """
        return dict(await self._send(s.eval_run_call(slug, filter_ids, tags)))

    async def eval_runs(self, slug: str) -> list[dict[str, Any]]:
        return list((await self._send(s.Call("GET", s.agent_path(slug, "dev/evals/runs"))))["runs"])

    async def eval_run(self, slug: str, run_id: str) -> dict[str, Any]:
        return dict(await self._send(s.Call("GET", s.eval_path(slug, run_id))))

    async def follow_eval_run(self, slug: str, run_id: str, *, interval: float = 0.5) -> AsyncIterator[dict[str, Any]]:
        """Each changed snapshot of the run until it is no longer ``running`` (the last
        one yielded is final)."""
        previous: dict[str, Any] | None = None
        while True:
            snapshot = await self.eval_run(slug, run_id)
            if snapshot != previous:
                yield snapshot
                previous = snapshot
            if snapshot["status"] != "running":
                return
            await asyncio.sleep(interval)

    async def cancel_eval_run(self, slug: str, run_id: str) -> dict[str, Any]:
        """Cancel a running run (its snapshot, ``cancelled``).

        Raises:
            ApiError: 404 unknown, 409 not running.
        """
        return dict(await self._send(s.Call("POST", s.eval_path(slug, run_id, "/cancel"))))

    # --- deployments ------------------------------------------------------------------

    async def create_agent(self, slug: str) -> dict[str, Any]:
        """``POST /api/v1/agents``: a tenant agent (409 when the slug is taken)."""
        return dict(await self._send(s.Call("POST", "/api/v1/agents", json={"slug": slug})))

    async def upload_deployment(
        self, slug: str, archive: s.Archive, *, content_type: str | None = None
    ) -> dict[str, Any]:
        """Upload a ``.tar.gz`` or ``.zip`` of the agent's tree (``agent/`` at its root):
        ``{"id", "hash", "status", "diagnostics"}``.

        Raises:
            ApiError: 422 the tree has errors (``body["diagnostics"]``), 413 too large.
        """
        return dict(await self._send(s.upload_call(slug, archive, content_type)))

    async def activate_deployment(self, slug: str, deployment_id: str) -> dict[str, Any]:
        """Make new sessions use this revision (running ones finish on theirs)."""
        return dict(await self._send(s.activate_call(slug, deployment_id)))
