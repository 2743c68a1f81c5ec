"""Who may see which session: one rule for HTTP routes and WebSocket streams."""

from __future__ import annotations

import functools

from django.db import connection

from agent_platform.models import Principal
from agent_platform.rows import columns, instance, width
from agents.models import Agent
from sessions_app.models import Session


class SessionAccessError(Exception):
    """Base of the reasons a caller cannot reach a session."""


class SessionNotFound(SessionAccessError):
    """No session with that id on that agent."""


class NotSessionOwner(SessionAccessError):
    """The session exists but belongs to another principal."""


def owned_session(agent: Agent, session_id: str, principal: Principal, *, any_owner: bool = False) -> Session:
    """The session of ``agent`` with this id, if ``principal`` owns it (or if
    ``any_owner``: the local developer in dev mode operates every session).

    Raises:
        SessionNotFound: no such session on this agent.
        NotSessionOwner: it belongs to someone else (same tenant or not).
    """
    session = Session.objects.select_related("agent").filter(pk=session_id, agent=agent).first()
    if session is None:
        raise SessionNotFound(session_id)
    check_owner(session, principal, any_owner=any_owner)
    return session


def find_session(agent_slug: str, session_id: str) -> Session | None:
    """The session with this id on the agent with this slug, its agent read with it in
    one query; None when there is none. Whether the agent is served, and to whom, is
    the caller's to check (``agents.api.views.served_agent(row=session.agent)``).

    Every session route starts here, so on Postgres the query is written out
    (``agent_platform.rows``): the ORM would spend ten times longer building it.
    """
    if connection.vendor != "postgresql":
        return Session.objects.select_related("agent").filter(pk=session_id, agent__slug=agent_slug).first()
    with connection.cursor() as cursor:
        cursor.execute(_find_session_sql(), [session_id, agent_slug])
        row = cursor.fetchone()
    if row is None:
        return None
    session = instance(Session, row[: width(Session)])
    session.agent = instance(Agent, row[width(Session) :])
    return session


@functools.cache
def _find_session_sql() -> str:
    # Table and column names are the models' own; the values are parameters.
    return (
        f"SELECT {columns(Session, 's')}, {columns(Agent, 'a')} "  # noqa: S608
        f"FROM {Session._meta.db_table} s JOIN {Agent._meta.db_table} a ON a.id = s.agent_id "
        "WHERE s.id = %s AND a.slug = %s"
    )


def check_owner(session: Session, principal: Principal, *, any_owner: bool = False) -> None:
    """Let ``principal`` use ``session`` only if it is theirs (or ``any_owner``).

    Raises:
        NotSessionOwner: it belongs to someone else (same tenant or not).
    """
    if session.principal_id != principal.pk and not any_owner:
        raise NotSessionOwner(session.pk)
