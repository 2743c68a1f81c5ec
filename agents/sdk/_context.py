"""The context objects handed to authored code.

The platform builds them; authors read them. Host APIs (``host.kv``,
``host.files``, ``artifacts.tag``) are async. Each field is typed with a
protocol so that an agent tree can be type-checked without the platform.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol


def no_secrets() -> Mapping[str, str]:
    """``ctx.secrets`` of a context the platform did not fill: empty, and read-only like
    the platform's (a ``MappingProxyType`` of the declared names it resolved)."""
    return MappingProxyType({})


class KV(Protocol):
    """``ctx.host.kv``: JSON values per key, per agent."""

    async def get(self, key: str, default: Any = None) -> Any: ...
    async def put(self, key: str, value: Any) -> None: ...
    async def delete(self, key: str) -> None: ...
    async def list(self, prefix: str = "") -> builtins.list[str]: ...


class Files(Protocol):
    """``ctx.host.files``: stored files, per session by default or agent-wide with
    ``scope="deployment"``; pass the etag you read to ``write`` to replace the file
    only if nobody changed it since."""

    async def read(self, path: str, *, scope: str = "session") -> tuple[bytes, str]: ...
    async def write(
        self, path: str, content: bytes | str, *, etag: str | None = None, scope: str = "session"
    ) -> str: ...
    async def list(self, prefix: str = "/", *, scope: str = "session") -> builtins.list[str]: ...
    async def delete(self, path: str, *, scope: str = "session") -> None: ...


class Artifacts(Protocol):
    """``ctx.artifacts``: keep a file for people to see (``GET /v1/artifacts``).

    ``await tag(name, content, kind=..., content_type=None, metadata=None)`` stores it under
    the current session (and turn) and returns its ``art_...`` id; tagging the same
    ``(kind, name)`` again in the session updates that artifact. ``content`` may be
    ``None`` (a tag with metadata only). Raises ``ValueError`` for a kind ``artifacts.py``
    does not declare, an empty or over-long name, a bad content type, metadata that is not a
    JSON object, or content over the platform's size limit."""

    async def tag(
        self,
        name: str,
        content: bytes | str | None = None,
        *,
        kind: str,
        content_type: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str: ...


class Reminders(Protocol):
    """``ctx.host.reminders``: one-shot messages to the current session, delivered as a
    follow-up (admission ``coalesce``) when due. ``create`` takes exactly one of ``at``
    (an aware future datetime) or ``delay`` (seconds or a timedelta > 0), else raises
    ``ValueError``; records are ``{"id", "sessionId", "message", "at", "status",
    "createdAt", "firedAt"}``; ``cancel`` is False for a reminder that is not this
    session's or not pending."""

    async def create(
        self, message: str, *, at: datetime | None = None, delay: float | timedelta | None = None
    ) -> dict[str, Any]: ...
    async def list(self) -> builtins.list[dict[str, Any]]: ...
    async def cancel(self, reminder_id: str) -> bool: ...


class Otel(Protocol):
    """``ctx.host.otel``: the agent's own metrics and span attributes; no-ops when the
    agent exports nothing (docs/observability.md)."""

    def increment(self, name: str, value: float = 1, attributes: Mapping[str, Any] | None = None) -> None: ...
    def record(self, name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None: ...
    def set_attributes(self, attributes: Mapping[str, Any]) -> None: ...


class Host(Protocol):
    """``ctx.host``: storage, telemetry, MCP and reminders of the platform; ``github``: the
    GitHub pack's API client (None without the pack)."""

    @property
    def kv(self) -> KV: ...
    @property
    def files(self) -> Files: ...
    @property
    def mcp(self) -> Any: ...
    @property
    def otel(self) -> Otel: ...
    @property
    def reminders(self) -> Reminders | None: ...
    @property
    def slack(self) -> Any: ...
    @property
    def github(self) -> Any: ...


class Signal:
    """Cancellation: set when the turn is stopped or preempted."""

    def __init__(self) -> None:
        self._event = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


@dataclass(frozen=True)
class ExtensionContext:
    """``ctx.extension``: the mount a contribution came from, for every contribution of a
    mounted extension or plugin (tools, dynamic instructions, hooks, channel handlers,
    schedule handlers); ``None`` for the agent's own code.

    ``namespace`` is the mount's name (``extensions/<namespace>.py``); ``config`` is the
    mount's config as the extension's ``define_extension(config=...)`` model validated it,
    defaults filled in, as a plain dict (``{}`` when the extension takes none). Each call
    gets its own copy, so changing it changes nothing for the next call.

    Example::

        @tool(effect="read")
        def quote(ctx: ToolContext, amount: float) -> str:
            \"\"\"A price in the shop's currency.\"\"\"
            return f"{amount:.2f} {ctx.extension.config['currency']}"
    """

    namespace: str
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class SessionInfo:
    """What authored code may know about the session it runs in; ``abs`` is the A/B arm
    the session was assigned in each experiment it is enrolled in, ``{experiment: arm}``
    (``{}`` for none), e.g. ``ctx.session.abs.get("tone") == "warm"``."""

    id: str
    agent: str
    mode: str = "chat"
    purpose: str = "live"
    dry_run: bool = False
    channel: str = "http"
    title: str = ""
    abs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ChannelInfo:
    """``ctx.channel``: the channel a session takes follow-ups on, and the token that
    continues it there (``POST /v1/tools/:name``, ``POST /v1/session``).

    ``id`` is ``"http"`` for the built-in API (the token is the session's current opaque
    one, which rotates on each follow-up) or the channel's name (the token is
    ``f"{id}:{key}"``, e.g. ``slack:T1/C9/1712.0001``, or the opaque one for a session
    the channel started without a key). ``ctx.channel`` itself is ``None`` when the session takes no
    follow-up (task mode) or there is no session (a direct call without one).

    Example::

        if ctx.channel is not None and ctx.channel.id == "slack":
            note = f"continue with {ctx.channel.continuation_token}"
        ctx.channel == {"id": "slack", "continuation_token": "slack:T1/C9/1712.0001"}  # the mapping form
    """

    id: str
    continuation_token: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"id": self.id, "continuation_token": self.continuation_token}

    def __eq__(self, other: object) -> bool:
        # Equal to its mapping form too: ctx.channel == {"id": "desk", "continuation_token": "desk:t-1"}
        if isinstance(other, ChannelInfo):
            return self.as_dict() == other.as_dict()
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.id, self.continuation_token))


@dataclass
class ToolContext:
    """Passed to a tool as its ``ctx`` parameter."""

    session: SessionInfo
    host: Host | None = None
    artifacts: Artifacts | None = None
    workspace: Path | None = None
    state_root: Path | None = None
    # The secrets the agent declared (define_agent(secrets=[...])), read-only, looked up for this call.
    secrets: Mapping[str, str] = field(default_factory=no_secrets)
    signal: Signal = field(default_factory=Signal)
    call_id: str = ""
    channel: ChannelInfo | None = None
    extension: ExtensionContext | None = None


@dataclass
class HookContext:
    """Passed to a hook handler, ``handler(event, ctx)``, and to a channel's ``events``
    handler, ``handler(event, channel, ctx)``, with each event."""

    session: SessionInfo
    agent: str
    channel: ChannelInfo | None = None
    host: Host | None = None
    artifacts: Artifacts | None = None
    extension: ExtensionContext | None = None
    secrets: Mapping[str, str] = field(default_factory=no_secrets)


@dataclass
class ChannelSession:
    """The ``channel`` a channel's ``events`` handler is called with, ``handler(event,
    channel, ctx)``: the channel (``id``, its file name) as the session of the event uses it.

    ``state`` is a JSON dict kept per (session, channel): change it in place or assign
    a new dict, and the platform saves it after the handler returns.
    ``set_continuation_token(key)`` re-keys the session on this channel (the old key
    stops resolving) once the handler returns."""

    id: str
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)
    continuation_token: str | None = None
    new_key: str | None = field(default=None, repr=False)

    def set_continuation_token(self, key: str) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("set_continuation_token needs a non-empty key string")
        self.new_key = key


class SendMessage(Protocol):
    """``ctx.send``: the platform's way for a channel to put a message into a session."""

    async def __call__(
        self, message: str, *, key: str | None = None, mode: str = "chat", title: str = "", admission: str = "preempt"
    ) -> dict[str, str]: ...


class SessionRefused(Exception):
    """Raised by ``ctx.send`` when the session cannot take the message (e.g. a task
    session keyed the same, or ``admission="reject"`` while a turn runs). Left
    uncaught, the route answers with ``status`` and ``{"error": code, "message"}``."""

    def __init__(self, message: str, *, code: str = "conflict", status: int = 409) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass(frozen=True)
class ChannelRequest:
    """The HTTP request a channel route answers, as ``auth`` and handlers see it.

    ``headers`` has lower-case names and leaves out the platform's own credentials
    (``authorization``, ``cookie``); ``body`` is the raw bytes (for signatures)."""

    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    query: dict[str, str] = field(default_factory=dict)


async def _not_served(message: str, **options: Any) -> dict[str, str]:
    raise RuntimeError("ctx.send is provided by the platform when it serves the route")


@dataclass
class ChannelContext:
    """Passed to a channel route handler: ``handler(ctx, body)`` for a route with a
    ``body`` model, ``handler(ctx)`` for one without.

    ``await ctx.send(message, key=..., mode=..., title=..., admission=...)`` starts a
    session on this channel, or continues the caller's session with the same ``key``
    (e.g. a Slack thread or ``pr:owner/repo#N``), and returns
    ``{"sessionId", "continuationToken", "turnId"}``."""

    agent: str
    channel: str
    host: Host | None = None
    secrets: Mapping[str, str] = field(default_factory=no_secrets)
    send: SendMessage = _not_served
    request: ChannelRequest | None = None
    extension: ExtensionContext | None = None


@dataclass
class ResultContext:
    """Passed to ``commit(ctx)`` after the model's final answer."""

    session: SessionInfo
    text: str
    host: Host | None = None
    artifacts: Artifacts | None = None
    secrets: Mapping[str, str] = field(default_factory=no_secrets)


@dataclass
class ScheduleArgs:
    """Passed to a schedule's handler: ``handler(args)`` when the schedule fires.

    ``fired_at`` is the fire time (aware, UTC); ``await args.send(message, key=None,
    mode="task", title=None)`` starts a session on the ``schedule`` channel (or continues
    the one with that ``key``) and returns ``{"sessionId", "continuationToken", "turnId"}``."""

    schedule_id: str
    fired_at: datetime
    host: Host | None = None
    send: Callable[..., Awaitable[dict[str, str]]] = _not_served
    extension: ExtensionContext | None = None
    secrets: Mapping[str, str] = field(default_factory=no_secrets)
