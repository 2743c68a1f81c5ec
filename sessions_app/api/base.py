"""The base of the session routes: ``SessionView`` resolves the served agent and the
caller's session once, before the handler runs, and the query helpers every session
view shares.

Every route decides ownership the same way (``sessions_app.access.check_owner``): an
unknown session is 404, a session of another principal (same tenant or not) is 403
with no detail, an agent that is not served 503. Refusals are raised, as
``DomainError``; ``agent_platform.errors.api_exception_handler`` writes the envelope.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.request import Request

from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agents.api.base import AgentView, served_agent
from agents.discovery import AgentSurface
from sessions_app.access import SessionNotFound, check_owner, find_session
from sessions_app.models import Session

ERROR = inline_serializer("Error", {"error": serializers.CharField(), "message": serializers.CharField()})

NON_NEGATIVE_INT = {"type": "integer", "minimum": 0}


def non_negative_int(request: Request, name: str, default: int, maximum: int | None = None) -> int:
    """A query parameter that must be a non-negative integer, given at most once
    (``NON_NEGATIVE_INT`` in the schema); larger than ``maximum`` means ``maximum``.

    Raises:
        ApiError: 400 ``invalid`` for anything else, an empty value included.
    """
    values = request.query_params.getlist(name)
    if not values:
        return default
    if len(values) > 1:
        raise ApiError(400, "invalid", f"{name} must be given once, not {len(values)} times.")
    raw = values[0]
    if not (raw.isascii() and raw.isdigit()):
        raise ApiError(400, "invalid", f"{name} must be a non-negative integer, not {raw[:40]!r}.")
    value = int(raw)
    return min(value, maximum) if maximum is not None else value


def caller_session(request: Request, agent_slug: str, session_id: str) -> tuple[Session, AgentSurface]:
    """The caller's session on this agent, with the agent's surface.

    Raises:
        AgentNotFound, AgentNotServed: as ``served_agent``.
        SessionNotFound: no such session on this agent.
        NotSessionOwner: another principal's session.
    """
    user = caller(request)
    # The session and its agent in one query; the agent's rules are then checked on that row.
    session = find_session(agent_slug, session_id)
    _, surface = served_agent(request, agent_slug, row=session.agent if session is not None else None)
    if session is None:
        raise SessionNotFound(f"No session {session_id!r} on this agent.")
    check_owner(session, user)
    return session, surface


class SessionView(AgentView):
    """A view under ``/<slug>/v1/session/:id``: ``self.session`` (the caller's),
    ``self.agent`` and ``self.surface`` are resolved before the handler runs."""

    session: Session

    def resolve(self, request: Request, agent_slug: str, **kwargs: Any) -> None:
        self.session, self.surface = caller_session(request, agent_slug, kwargs["session_id"])
        self.agent = self.session.agent
