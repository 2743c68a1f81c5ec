"""What the sync and the async client share: the requests of each route, the decoding
of answers, and the bookkeeping of a resumable stream. Neither does any I/O here."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx

from agent_platform_client._errors import ApiError, StreamLost
from agent_platform_client._events import (
    EVENT_STREAM,
    NDJSON,
    SESSION_END,
    TURN_END,
    Event,
    SseParser,
    StreamFormat,
    TurnResult,
    record_of,
)

Decision = Literal["approve", "deny"]
Admission = Literal["preempt", "coalesce", "enqueue", "reject"]
Archive = bytes | str | os.PathLike[str]


@dataclass(frozen=True)
class Accepted:
    """What starting or continuing a session answers (201 / 202)."""

    session_id: str
    continuation_token: str
    turn_id: str

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Accepted:
        return cls(str(body["sessionId"]), str(body.get("continuationToken") or ""), str(body["turnId"]))


@dataclass(frozen=True)
class Call:
    """One HTTP request, before it is sent."""

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    content: bytes | None = None


def _segment(value: str) -> str:
    return quote(value, safe="")


def agent_path(slug: str, rest: str) -> str:
    return f"/{_segment(slug)}/v1/{rest}"


def session_path(slug: str, session_id: str, rest: str = "") -> str:
    return agent_path(slug, f"session/{_segment(session_id)}{rest}")


def _idempotent(key: str | None) -> dict[str, str] | None:
    return {"Idempotency-Key": key} if key else None


def start_call(
    slug: str,
    message: str,
    *,
    continuation_token: str | None,
    mode: str | None,
    title: str | None,
    purpose: str | None,
    dry_run: bool | None,
    workspace_files: dict[str, str] | None,
    idempotency_key: str | None,
) -> Call:
    body: dict[str, Any] = {"message": message}
    optional = {
        "continuationToken": continuation_token,
        "mode": mode,
        "title": title,
        "purpose": purpose,
        "dryRun": dry_run,
        "workspaceFiles": workspace_files,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    return Call("POST", agent_path(slug, "session"), json=body, headers=_idempotent(idempotency_key))


def follow_up_call(
    slug: str,
    session_id: str,
    message: str,
    *,
    admission: str | None,
    workspace_files: dict[str, str] | None,
    idempotency_key: str | None,
) -> Call:
    body: dict[str, Any] = {"message": message}
    if admission is not None:
        body["admission"] = admission
    if workspace_files is not None:
        body["workspaceFiles"] = workspace_files
    return Call("POST", session_path(slug, session_id), json=body, headers=_idempotent(idempotency_key))


def events_call(slug: str, session_id: str, start_index: int) -> Call:
    return Call("GET", session_path(slug, session_id, "/events"), params={"startIndex": start_index})


def decide_call(slug: str, session_id: str, call_id: str, decision: Decision, reason: str | None) -> Call:
    body: dict[str, Any] = {"decision": decision}
    if reason is not None:
        body["reason"] = reason
    return Call("POST", session_path(slug, session_id, f"/approvals/{_segment(call_id)}"), json=body)


def tool_call(
    slug: str, name: str, arguments: dict[str, Any], session_id: str | None, continuation_token: str | None
) -> Call:
    body: dict[str, Any] = {"input": arguments}
    if session_id is not None:
        body["sessionId"] = session_id
    if continuation_token is not None:
        body["continuationToken"] = continuation_token
    return Call("POST", agent_path(slug, f"tools/{_segment(name)}"), json=body)


def eval_run_call(slug: str, filter_ids: list[str] | None, tags: list[str] | None) -> Call:
    body: dict[str, Any] = {}
    if filter_ids:
        body["filterIds"] = list(filter_ids)
    if tags:
        body["tags"] = list(tags)
    return Call("POST", agent_path(slug, "dev/evals/runs"), json=body)


def eval_path(slug: str, run_id: str, rest: str = "") -> str:
    return agent_path(slug, f"dev/evals/runs/{_segment(run_id)}{rest}")


def deployments_path(slug: str, rest: str = "") -> str:
    return f"/api/v1/agents/{_segment(slug)}/deployments{rest}"


def activate_call(slug: str, deployment_id: str) -> Call:
    return Call("POST", deployments_path(slug, f"/{_segment(deployment_id)}/activate"))


def upload_call(slug: str, archive: Archive, content_type: str | None) -> Call:
    """The archive as the raw body; its type from ``content_type`` or the file name
    (``.zip``: ``application/zip``, otherwise ``application/gzip``)."""
    if isinstance(archive, bytes):
        content, name = archive, ""
    else:
        path = Path(archive)
        content, name = path.read_bytes(), path.name
    kind = content_type or ("application/zip" if name.endswith(".zip") or content[:2] == b"PK" else "application/gzip")
    return Call("POST", deployments_path(slug), content=content, headers={"Content-Type": kind})


def decode(response: httpx.Response) -> Any:
    """The JSON body of a 2xx answer (None if empty).

    Raises:
        ApiError: any other status, with the platform's ``error`` and ``message``.
    """
    if response.is_success:
        return response.json() if response.content else None
    raise error_of(response)


def error_of(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        return ApiError(response.status_code, str(body["error"]), str(body.get("message", "")), body)
    text = response.text[:300] if not response.is_stream_consumed or response.content else ""
    return ApiError(response.status_code, "http_error", text or response.reason_phrase, body)


def request_of(http: httpx.Client | httpx.AsyncClient, call: Call) -> httpx.Request:
    return http.build_request(
        call.method, call.path, json=call.json, params=call.params, headers=call.headers, content=call.content
    )


def stream_args(call: Call) -> dict[str, Any]:
    return {"method": call.method, "url": call.path, "params": call.params, "headers": call.headers}


# --- streams ----------------------------------------------------------------------------


class _Truncated(Exception):
    """The connection ended inside a record: resume from the last whole one."""


@dataclass
class Decoder:
    """Turns the text of one stream response into events, by its content type."""

    sse: bool
    _sse: SseParser = field(default_factory=SseParser)
    _buffer: str = ""

    @classmethod
    def for_response(cls, response: httpx.Response) -> Decoder:
        return cls(sse=response.headers.get("content-type", "").startswith(EVENT_STREAM))

    def feed(self, text: str) -> Iterator[Event]:
        try:
            if self.sse:
                for message in self._sse.feed(text):
                    event = record_of(message.data)
                    if event is not None:
                        yield event
                return
            self._buffer += text
            *lines, self._buffer = self._buffer.split("\n")
            for line in lines:
                event = record_of(line)
                if event is not None:
                    yield event
        except ValueError as error:
            raise _Truncated(str(error)) from error

    def close(self) -> Iterator[Event]:
        """At the end of the body: a last line without its newline is a record cut short."""
        if not self.sse and self._buffer.strip():
            try:
                event = record_of(self._buffer)
            except ValueError as error:
                raise _Truncated(str(error)) from error
            self._buffer = ""
            if event is not None:
                yield event


@dataclass
class Resume:
    """A stream's position across reconnects: what to ask for next, what was seen
    already (never yielded twice), and how long to wait after a drop.

    ``max_attempts`` drops in a row with no new event give up (``StreamLost``).
    """

    slug: str
    session_id: str
    fmt: StreamFormat
    last_index: int
    max_attempts: int
    backoff: float
    failures: int = 0
    finished: bool = False

    def call(self) -> Call:
        headers = {"Accept": EVENT_STREAM if self.fmt == "sse" else NDJSON}
        if self.fmt == "sse" and self.last_index >= 0:
            headers["Last-Event-ID"] = str(self.last_index)
        return Call(
            "GET",
            session_path(self.slug, self.session_id, "/stream"),
            params={"startIndex": self.last_index + 1},
            headers=headers,
        )

    def accept(self, event: Event) -> bool:
        """True when ``event`` is new; the stream is finished after a session's end."""
        if event.index <= self.last_index:
            return False
        self.last_index, self.failures = event.index, 0
        self.finished = event.type in SESSION_END
        return True

    def dropped(self, cause: BaseException | None) -> float:
        """Seconds to wait before reconnecting.

        Raises:
            StreamLost: too many drops in a row.
        """
        self.failures += 1
        if self.failures > self.max_attempts:
            raise StreamLost(self.last_index, self.failures - 1, cause)
        return min(self.backoff * 2 ** (self.failures - 1), 5.0)


# What counts as a dropped stream (reconnect) rather than an answer to report.
DROPS: tuple[type[BaseException], ...] = (httpx.TransportError, _Truncated)
RETRY_STATUSES = frozenset({502, 503, 504})


@dataclass
class TurnWatch:
    """Collects one turn's events from a session stream until it ends or parks."""

    accepted: Accepted
    events: list[Event] = field(default_factory=list)
    next_index: int = 0

    @classmethod
    def of(cls, turn: Accepted | TurnResult) -> TurnWatch:
        if isinstance(turn, Accepted):
            return cls(turn)
        accepted = Accepted(turn.session_id, turn.continuation_token, turn.turn_id)
        return cls(accepted, list(turn.events), turn.next_index)

    def take(self, event: Event) -> bool:
        """Keep ``event`` if it is the turn's; True when the turn is settled for now."""
        self.next_index = event.index + 1
        if event.type in SESSION_END:
            return True
        if event.turn_id != self.accepted.turn_id:
            return False
        self.events.append(event)
        if event.data.get("parentCallId"):
            return False
        return event.type in TURN_END or event.type == "action.approval_requested"

    def result(self) -> TurnResult:
        a = self.accepted
        return TurnResult(a.session_id, a.continuation_token, a.turn_id, self.events, self.next_index)


def user_agent() -> str:
    from agent_platform_client import __version__

    return f"agent-platform-client/{__version__}"
