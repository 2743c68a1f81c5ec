"""``agent dispatch``: an operator runs a schedule, fires a reminder or sends a task message
now, in any mode (the HTTP dev routes exist only in dev mode).

Here rather than in ``agents``: the agent CLI (``agents``) never imports the service
(``sessions_app``); like ``agent serve`` with ``agent_platform.embedded``, it calls this
module of the platform, which does.
"""

from __future__ import annotations

from typing import Any

from agent_platform.errors import DomainError
from agents.registry import get_agent, surface_for
from sessions_app.triggers import schedules
from sessions_app.triggers.reminder_firing import fire_reminder_now


class DispatchRefused(Exception):
    """The dispatch could not happen: no such agent, schedule or reminder, a broken tree."""


def dispatch(slug: str, *, schedule: str | None, reminder: str | None, message: str | None) -> dict[str, Any]:
    """Do one dispatch; returns ``{"scheduleId"|"reminderId", "sessionIds": [...]}``
    (``{"sessionIds": [...]}`` for a message).

    Raises:
        DispatchRefused: with a message for the operator.
    """
    agent = get_agent(slug)
    if agent is None:
        raise DispatchRefused(f"no agent is served as {slug!r}")
    surface = surface_for(agent)
    if surface.errors:
        raise DispatchRefused(f"{slug} has errors; fix them first (agent validate)")
    try:
        if schedule is not None:
            return schedules.run_schedule_now(agent, surface, schedule)
        if reminder is not None:
            return _fire_reminder(slug, reminder)
        assert message is not None
        if not message.strip():
            raise DispatchRefused("--message needs some text")
        return schedules.dispatch_message(agent, surface, message)
    except DomainError as refused:
        raise DispatchRefused(str(refused)) from refused


def _fire_reminder(slug: str, reminder_id: str) -> dict[str, Any]:
    fired = fire_reminder_now(slug, reminder_id)
    return {"reminderId": fired["reminderId"], "sessionIds": [fired["sessionId"]]}


def wait(document: dict[str, Any], timeout: float) -> bool:
    """``--wait``: True once every session of the dispatch completed."""
    from sessions_app.triggers.schedules import wait_for_sessions

    return wait_for_sessions(list(document["sessionIds"]), timeout)
