"""Authored channel routes: ``/<slug>/v1/channels/<channel><route.path>`` (DESIGN.md §6, §7).

A call finds its route by exact path and method, passes the channel's own ``auth``
(on top of the platform's), validates the JSON body against the route's pydantic
model, runs the handler and answers with what it returned. Handlers reach sessions
through ``ctx.send`` (``ChannelSender``): with a ``key`` the caller's session on this
channel with that ``Session.continuation_key`` is continued, otherwise a new one is
started.

Answers: the handler's value as JSON; 201 when the call started a session, 202 when
it only continued one, else 200; None is 204 (or the last ``ctx.send`` answer when the
call sent something). A handler (or ``auth``) that raises is logged in the agent's log
and answered 502 ``channel_handler_failed`` with ``"<ExceptionType>: <message>"``; a
handler that raises after ``ctx.send`` leaves that message sent.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import IntegrityError
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from agent_platform.errors import DomainError
from agent_platform.models import Principal
from agents import sdk
from agents.discovery import AgentSurface, extension_context
from agents.models import Agent
from agents.secrets import declared_secrets
from sessions_app import services
from sessions_app.channel_state import listed_token
from sessions_app.host import host_for_agent
from sessions_app.logs import agent_log_tags
from sessions_app.models import Admission, Session, SessionMode

logger = logging.getLogger(__name__)

MAX_TITLE_CHARS = Session._meta.get_field("title").max_length or 200
MAX_KEY_CHARS = Session._meta.get_field("continuation_key").max_length or 300
# Request headers the platform consumed itself: authored code never sees them.
PRIVATE_HEADERS = frozenset({"authorization", "cookie"})


class ChannelError(DomainError):
    """A call the channel route refuses; ``status``, ``code``, ``extra`` and ``allow`` (the
    ``Allow`` header of a 405) are the HTTP answer."""

    def __init__(
        self, status: int, code: str, message: str, *, extra: dict[str, Any] | None = None, allow: str = ""
    ) -> None:
        super().__init__(message, status=status, code=code, extra=extra, headers={"Allow": allow} if allow else None)
        self.allow = allow


@dataclass(frozen=True)
class ChannelAnswer:
    status: int
    body: Any  # JSON-safe; None means no body (204)


# --- finding the route -----------------------------------------------------------------------


def route_record(slug: str, channel: str, route: sdk.Route) -> dict[str, str]:
    return {"method": route.method, "path": route.path, "url": f"/{slug}/v1/channels/{channel}{route.path}"}


def _listing(records: list[dict[str, str]]) -> str:
    return ", ".join(f"{r['method']} {r['url']}" for r in records) or "none"


def find_route(surface: AgentSurface, slug: str, channel: str, path: str, method: str) -> tuple[sdk.Channel, sdk.Route]:
    """The channel and its route for ``method`` and ``path`` (exact match).

    Raises:
        ChannelError: 404 ``channel_not_found`` / ``route_not_found`` with the available
            routes, 405 ``method_not_allowed`` (with ``allow``) for a known path.
    """
    entry = surface.channels.get(channel)
    if entry is None:
        every = [route_record(slug, name, r) for name, e in surface.channels.items() for r in e.value.routes]
        names = ", ".join(surface.channels) or "none"
        raise ChannelError(
            404,
            "channel_not_found",
            f"No channel {channel!r}. Channels: {names}. Routes: {_listing(every)}.",
            extra={"routes": every},
        )
    routes = entry.value.routes
    on_path = [route for route in routes if route.path == path]
    if not on_path:
        available = [route_record(slug, channel, route) for route in routes]
        raise ChannelError(
            404,
            "route_not_found",
            f"No route {path or '/'} on channel {channel!r}. Routes: {_listing(available)}.",
            extra={"routes": available},
        )
    for route in on_path:
        if route.method == method:
            return entry.value, route
    allowed = allowed_methods(entry.value, path)
    raise ChannelError(405, "method_not_allowed", f"{path} on channel {channel!r} allows {allowed}.", allow=allowed)


def allowed_methods(channel: sdk.Channel, path: str) -> str:
    """The ``Allow`` header for a route path: its methods in definition order."""
    return ", ".join(route.method for route in channel.routes if route.path == path)


def channel_request(
    method: str, path: str, headers: dict[str, str], body: bytes, query: dict[str, str]
) -> sdk.ChannelRequest:
    """The request as authored code sees it: lower-case header names, no platform credentials."""
    visible = {name.lower(): value for name, value in headers.items() if name.lower() not in PRIVATE_HEADERS}
    return sdk.ChannelRequest(method=method, path=path, headers=visible, body=body, query=dict(query))


def parse_body(route: sdk.Route, data: Any) -> BaseModel | None:
    """The route's body model from the parsed JSON; None for a route without one.

    Raises:
        ChannelError: 400 ``invalid_body`` with pydantic's errors as ``details``.
    """
    if route.body is None:
        return None
    try:
        return route.body.model_validate(data)
    except ValidationError as error:
        details = json.loads(error.json(include_url=False))
        problems = "; ".join(f"{'.'.join(map(str, d['loc'])) or 'body'}: {d['msg']}" for d in details)
        raise ChannelError(400, "invalid_body", problems, extra={"details": details}) from None


# --- ctx.send --------------------------------------------------------------------------------


@dataclass
class ChannelSender:
    """``ctx.send`` for one call: starts or continues the caller's sessions on the channel,
    and remembers whether it did (the route's status says so)."""

    agent: Agent
    surface: AgentSurface
    principal: Principal
    channel: str
    default_model: str
    started: bool = False
    continued: bool = False
    last: dict[str, str] | None = field(default=None)

    async def __call__(
        self, message: str, *, key: str | None = None, mode: str = "chat", title: str = "", admission: str = "preempt"
    ) -> dict[str, str]:
        # Thread-sensitive: runs on the request's thread and connection.
        return await sync_to_async(self.send, thread_sensitive=True)(
            message, key=key, mode=mode, title=title, admission=admission
        )

    def send(self, message: str, *, key: str | None, mode: str, title: str, admission: str) -> dict[str, str]:
        """The plain form of ``ctx.send``.

        Raises:
            ValueError: for arguments that cannot work (an authoring error).
            sdk.SessionRefused: the session refused the message (e.g. a task session).
        """
        _check_arguments(message, key, mode, title, admission)
        try:
            session = self._keyed(key)
            if session is None:
                try:
                    session, turn = self._start(message, key=key or "", mode=mode, title=title)
                    self.started = True
                except IntegrityError:
                    # Another call started this key's session first: continue it.
                    session = self._keyed(key)
                    if session is None:
                        raise
                    turn = services.continue_session(session, message=message, admission=admission)
                    self.continued = True
            else:
                turn = services.continue_session(session, message=message, admission=admission)
                self.continued = True
        except services.SessionError as error:
            raise sdk.SessionRefused(str(error), code=error.code, status=error.status) from None
        session.refresh_from_db(fields=["continuation_token", "continuation_key"])
        # A keyed session's token is "<channel>:<key>" (as listed); a keyless one's the opaque HTTP token.
        token = listed_token(session) or ""
        self.last = {"sessionId": session.pk, "continuationToken": token, "turnId": turn.pk}
        return self.last

    def _keyed(self, key: str | None) -> Session | None:
        if not key:
            return None
        sessions = Session.objects.filter(
            agent=self.agent, principal=self.principal, channel=self.channel, continuation_key=key
        )
        return sessions.first()

    def _start(self, message: str, *, key: str, mode: str, title: str) -> tuple[Session, Any]:
        return services.start_session(
            self.agent,
            self.surface,
            self.principal,
            message=message,
            mode=mode,
            title=title,
            channel=self.channel,
            continuation_key=key,
            default_model=self.default_model,
        )


def _check_arguments(message: Any, key: Any, mode: Any, title: Any, admission: Any) -> None:
    if not isinstance(message, str) or not message.strip():
        raise ValueError("ctx.send needs a non-empty message string")
    if key is not None and (not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS):
        raise ValueError(f"ctx.send key must be a non-empty string of at most {MAX_KEY_CHARS} characters")
    if mode not in SessionMode.values:
        raise ValueError(f"ctx.send mode must be one of {SessionMode.values}, not {mode!r}")
    if admission not in Admission.values:
        raise ValueError(f"ctx.send admission must be one of {Admission.values}, not {admission!r}")
    if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS:
        raise ValueError(f"ctx.send title must be a string of at most {MAX_TITLE_CHARS} characters")


# --- calling the authored code ---------------------------------------------------------------


def run_to_completion(function: Callable[..., Any], *args: Any) -> Any:
    """Call a plain or async function from this (sync) thread and return its value."""
    if inspect.iscoroutinefunction(function):
        return async_to_sync(function)(*args)
    result = function(*args)
    if inspect.isawaitable(result):
        return async_to_sync(_awaited)(result)
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _failed(error: Exception, what: str, agent: Agent, principal: Principal) -> ChannelError:
    logger.error(
        "%s failed: %s: %s",
        what,
        type(error).__name__,
        error,
        exc_info=error,
        extra={"agent_slug": agent.slug, "tenant_id": principal.tenant_id},
    )
    return ChannelError(502, "channel_handler_failed", f"{type(error).__name__}: {error}")


def check_channel_auth(
    channel_name: str, channel: sdk.Channel, request: sdk.ChannelRequest, agent: Agent, principal: Principal
) -> None:
    """Run the channel's own ``auth``, when it has one.

    Raises:
        ChannelError: 401 ``channel_unauthorized`` on a falsy answer; 502 when it raises.
    """
    if channel.auth is None:
        return
    try:
        admitted = run_to_completion(channel.auth, request)
    except Exception as error:  # noqa: BLE001 -- authored code: logged and answered 502
        raise _failed(error, f"auth of channel {channel_name!r}", agent, principal) from None
    if not admitted:
        raise ChannelError(401, "channel_unauthorized", f"Channel {channel_name!r} refused this request.")


def call_route(
    route: sdk.Route, ctx: sdk.ChannelContext, body: BaseModel | None, sender: ChannelSender, principal: Principal
) -> ChannelAnswer:
    """Run the handler and turn its value into the answer.

    Raises:
        ChannelError: 502 when the handler raises or returns something that is not JSON;
            ``SessionRefused``'s status when ``ctx.send`` was refused and not caught.
    """
    what = f"channel {ctx.channel!r} route {route.method} {route.path}"
    try:
        # What the handler logs (any logger) is the agent's, on its /v1/logs.
        with agent_log_tags(sender.surface, agent_slug=sender.agent.slug, tenant_id=principal.tenant_id):
            result = run_to_completion(route.handler, ctx, *([body] if route.body is not None else []))
        payload = None if result is None else to_jsonable_python(result)
    except sdk.SessionRefused as refused:
        raise ChannelError(refused.status, refused.code, str(refused)) from None
    except Exception as error:  # noqa: BLE001 -- authored code: logged and answered 502
        raise _failed(error, what, sender.agent, principal) from None
    status = 201 if sender.started else 202 if sender.continued else 200
    if payload is None:
        if sender.last is None:
            return ChannelAnswer(204, None)
        payload = sender.last
    return ChannelAnswer(status, payload)


def channel_context(
    agent: Agent, channel: str, sender: ChannelSender, request: sdk.ChannelRequest, tenant_id: int
) -> sdk.ChannelContext:
    entry = sender.surface.channels.get(channel)
    return sdk.ChannelContext(
        agent=agent.slug,
        channel=channel,
        host=host_for_agent(tenant_id, agent, channel=channel),
        secrets=declared_secrets(agent, sender.surface.config.secrets),
        send=sender,
        request=request,
        extension=extension_context(sender.surface.extensions, entry.extension if entry is not None else None),
    )
