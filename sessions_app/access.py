"""Who may see which session: one rule for HTTP routes and WebSocket streams."""

from __future__ import annotations

from agent_platform.models import Principal
from agents.registry import get_visible_agent
from sessions_app.models import Session


class SessionAccessError(Exception):
    """Base of the reasons a caller cannot reach a session."""


class AgentNotFound(SessionAccessError):
    """No agent at that slug, or one that belongs to another tenant."""


class SessionNotFound(SessionAccessError):
    """No session with that id on that agent."""


class NotSessionOwner(SessionAccessError):
    """The session exists but belongs to another principal."""


def owned_session(agent_slug: str, session_id: str, principal: Principal) -> Session:
    """The session, if ``principal`` owns it and can see its agent.

    Raises:
        AgentNotFound, SessionNotFound, NotSessionOwner: in that order of checking.
    """
    agent = get_visible_agent(agent_slug, principal.tenant)
    if agent is None:
        raise AgentNotFound(agent_slug)
    session = Session.objects.select_related("agent").filter(pk=session_id, agent=agent).first()
    if session is None:
        raise SessionNotFound(session_id)
    if session.principal_id != principal.pk:
        raise NotSessionOwner(session_id)
    return session
