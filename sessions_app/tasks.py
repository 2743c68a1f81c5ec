"""Celery tasks of the sessions app: thin shims over plain functions."""

from __future__ import annotations

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from agent_platform.conf import platform_settings
from sessions_app.execution import AgentAtCapacity, execute_turn
from sessions_app.execution import sweep_turns as sweep
from sessions_app.maintenance import prune_log_lines as prune

CAPACITY_RETRY_SECONDS = 0.5


@shared_task(name="sessions_app.tasks.prune_log_lines")
def prune_log_lines() -> int:
    """Keep the newest ``PLATFORM['LOG_LINES_KEPT']`` log lines (beat, every 10 minutes)."""
    return prune(keep=platform_settings.LOG_LINES_KEPT)


# max_retries=None: a turn waiting for its agent's capacity waits as long as it takes
# (Celery reads None given to retry() as "the default of 3").
@shared_task(
    name="sessions_app.tasks.run_turn", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None
)
def run_turn(self: Task, turn_id: str) -> None:
    """Run or resume one turn (idempotent: a duplicate delivery claims nothing); a turn
    of an agent at its ``max_running_turns`` tries again shortly, and one that lost the
    database tries again once its lease has run out (it resumes from its log)."""
    try:
        execute_turn(turn_id)
    except AgentAtCapacity as waiting:
        raise self.retry(countdown=CAPACITY_RETRY_SECONDS) from waiting
    except (OperationalError, InterfaceError) as lost:
        raise self.retry(countdown=platform_settings.TURN_LEASE_SECONDS + 1) from lost


@shared_task(name="sessions_app.tasks.sweep_turns")
def sweep_turns() -> int:
    """Re-dispatch turns of dead workers and queued turns nobody picked up (beat)."""
    return sweep()


@shared_task(name="sessions_app.tasks.dispatch_events")
def dispatch_events(session_id: str | None = None) -> int:
    """Hand the session's new events to its channel's and hooks' handlers (idempotent);
    without a session id, catch up on every session whose dispatch fell behind (beat)."""
    from sessions_app.dispatch import dispatch_pending, sweep_undispatched

    return dispatch_pending(session_id) if session_id else sweep_undispatched()
