"""Who may see which session: one rule (``check_owner`` and ``visible_sessions``) for
every HTTP route, whether it names the session by id or by continuation token, for
artifacts (an artifact is its session owner's) and for WebSocket streams."""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from agent_platform import rls
from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.errors import DomainError
from agent_platform.rows import columns, instance, width
from agents.models import Agent
from sessions_app.models import Session


class SessionAccessError(DomainError):
    """Base of the reasons a caller cannot reach a session."""


class SessionNotFound(SessionAccessError):
    """No session with that id on that agent."""

    status, code = 404, "session_not_found"


class NotSessionOwner(SessionAccessError):
    """The session exists but belongs to another principal: 403 with no detail."""

    status, code = 403, "forbidden"

    def __init__(self, message: str = "You do not own this session.") -> None:
        super().__init__(message)


def owned_session(agent: Agent, session_id: str, user: AuthenticatedPrincipal) -> Session:
    """The session of ``agent`` with this id, if ``user`` may use it (``check_owner``).

    Raises:
        SessionNotFound: no such session on this agent.
        NotSessionOwner: it belongs to someone else (same tenant or not).
    """
    session = rls.found_across_tenants(  # see find_session
        lambda: Session.objects.select_related("agent").filter(pk=session_id, agent=agent).first()
    )
    if session is None:
        raise SessionNotFound(f"No session {session_id!r} on this agent.")
    check_owner(session, user)
    return session


def find_session(agent_slug: str, session_id: str) -> Session | None:
    """The session with this id on the agent with this slug, its agent read with it in
    one query; None when there is none. Whether the agent is served, and to whom, is
    the caller's to check (``agents.api.base.served_agent(row=session.agent)``).

    Every session route starts here, so on Postgres the query is written out
    (``agent_platform.rows``): the ORM would spend ten times longer building it.

    Another tenant's session is found too (``agent_platform.rls.found_across_tenants``),
    because the contract answers its id with 403, not 404: callers check ``may_use`` before
    anything of the session is used.
    """
    if connection.vendor != "postgresql":
        return Session.objects.select_related("agent").filter(pk=session_id, agent__slug=agent_slug).first()
    return rls.found_across_tenants(lambda: _session_and_agent("s.id = %s AND a.slug = %s", session_id, agent_slug))


def session_with_agent(session_id: str) -> Session | None:
    """The session with this id and its agent, read in one query (None when there is
    none), in the caller's row-level security scope: for the platform's own work on a
    session (dispatching its events), which has no caller to check.

    Every dispatch of a session's events starts here, so on Postgres the query is
    written out, as ``find_session``'s is.
    """
    if connection.vendor != "postgresql":
        return Session.objects.select_related("agent").filter(pk=session_id).first()
    return _session_and_agent("s.id = %s", session_id)


def _session_and_agent(where: str, *params: Any) -> Session | None:
    """The session matching ``where`` (over ``s``, the session, and ``a``, its agent)
    with its agent set, from one written-out query; None when none matches."""
    with connection.cursor() as cursor:
        cursor.execute(_session_and_agent_sql(where), params)
        row = cursor.fetchone()
    if row is None:
        return None
    session = instance(Session, row[: width(Session)])
    session.agent = instance(Agent, row[width(Session) :])
    return session


@functools.cache
def _session_and_agent_sql(where: str) -> str:
    # Table and column names are the models' own; the values are parameters.
    return (
        f"SELECT {columns(Session, 's')}, {columns(Agent, 'a')} "  # noqa: S608
        f"FROM {Session._meta.db_table} s JOIN {Agent._meta.db_table} a ON a.id = s.agent_id "
        f"WHERE {where}"
    )


def may_use(session: Session, user: AuthenticatedPrincipal) -> bool:
    """The ownership rule: a session is its principal's, and the local developer in dev
    mode (``sees_all_sessions``) operates every session of the local platform."""
    return user.sees_all_sessions or session.principal_id == user.principal.pk


def check_owner(session: Session, user: AuthenticatedPrincipal) -> None:
    """Let ``user`` use ``session`` only if ``may_use`` says so.

    Raises:
        NotSessionOwner: it belongs to someone else (same tenant or not).
    """
    if not may_use(session, user):
        raise NotSessionOwner()


def visible_sessions(sessions: QuerySet[Session], user: AuthenticatedPrincipal) -> QuerySet[Session]:
    """``sessions`` narrowed to those ``user`` may use: ``may_use`` as a filter."""
    return sessions if user.sees_all_sessions else sessions.filter(principal=user.principal)
