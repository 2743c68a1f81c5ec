"""Celery tasks of the sessions app: thin shims over plain functions (nothing else).

Their names are ``sessions_app.queues.TaskName``; the code that sends them sends
them by name, so nothing in the core imports this module.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.signals import beat_init
from django.db import InterfaceError, OperationalError

from agent_platform.conf import platform_settings
from sessions_app.dispatch import dispatch_pending, sweep_undispatched
from sessions_app.evals import runs as eval_runs
from sessions_app.maintenance import prune_log_lines as prune
from sessions_app.queues import TaskName, send
from sessions_app.records import artifacts, retention
from sessions_app.scheduling import AgentAtCapacity, TurnDeferred
from sessions_app.scheduling import sweep_turns as sweep
from sessions_app.triggers import schedules
from sessions_app.triggers.reminder_firing import fire_due
from sessions_app.triggers.webhooks import deliver, sweep_due
from sessions_app.turn_loop import LeaseLost
from sessions_app.turn_worker import execute_turn

CAPACITY_RETRY_SECONDS = 0.5


@shared_task(name=TaskName.PRUNE_LOG_LINES)
def prune_log_lines() -> int:
    """Keep the newest ``PLATFORM['LOG_LINES_KEPT']`` log lines (beat, every 10 minutes)."""
    return prune(keep=platform_settings.LOG_LINES_KEPT)


@shared_task(name=TaskName.PRUNE_ARTIFACTS)
def prune_artifacts() -> int:
    """Remove artifacts past their kind's retention (beat, hourly)."""
    return artifacts.delete_expired()


@shared_task(name=TaskName.RUN_RETENTION)
def run_retention() -> dict[str, object]:
    """Delete ended sessions past their retention, old trigger records, idle workspaces (beat, hourly)."""
    return retention.run_retention().as_dict()


# max_retries=None: a turn waiting for its agent's capacity waits as long as it takes
# (Celery reads None given to retry() as "the default of 3").
@shared_task(name=TaskName.RUN_TURN, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_queued_turn(self: Task, turn_id: str, tenant_id: int | None = None) -> None:
    """Run or resume one turn (idempotent: a duplicate delivery claims nothing); a turn
    of an agent at its ``max_running_turns``, or of a tenant holding its share of this
    worker while others wait, tries again shortly, and one that lost the
    database tries again once its lease has run out (it resumes from its log)."""
    try:
        execute_turn(turn_id, tenant_id)
    except (AgentAtCapacity, TurnDeferred) as waiting:
        raise self.retry(countdown=CAPACITY_RETRY_SECONDS) from waiting
    except (OperationalError, InterfaceError, LeaseLost) as lost:
        raise self.retry(countdown=platform_settings.TURN_LEASE_SECONDS + 1) from lost


@shared_task(name=TaskName.SWEEP_TURNS)
def sweep_turns() -> int:
    """Re-dispatch turns of dead workers and queued turns nobody picked up (beat)."""
    return sweep()


@shared_task(name=TaskName.DISPATCH_EVENTS)
def dispatch_events(session_id: str | None = None) -> int:
    """Hand the session's new events to its channel's and hooks' handlers (idempotent);
    without a session id, catch up on every session whose dispatch fell behind (beat)."""
    return dispatch_pending(session_id) if session_id else sweep_undispatched()


@shared_task(name=TaskName.FIRE_REMINDERS)
def fire_reminders() -> int:
    """Fire the reminders that are due (beat, every few seconds; nothing in dev mode)."""
    return fire_due()


@shared_task(name=TaskName.SYNC_SCHEDULES)
def sync_schedules() -> None:
    """Keep one PeriodicTask per served schedule (beat, and once when beat starts)."""
    schedules.sync_schedules()


# No retries: a fire that fails is recorded failed, and a late retry would be a late run.
@shared_task(name=TaskName.FIRE_SCHEDULE)
def fire_schedule(slug: str, schedule_id: str) -> None:
    """Run one schedule for its fire time, at most once (beat, from its PeriodicTask)."""
    schedules.fire_schedule(slug, schedule_id)


@beat_init.connect
def _sync_schedules_at_beat_start(**_: Any) -> None:
    """A schedule added while beat was stopped gets its PeriodicTask now, not at the next sync."""
    send(TaskName.SYNC_SCHEDULES)


@shared_task(name=TaskName.DELIVER_WEBHOOK)
def deliver_webhook(delivery_id: str) -> str | None:
    """One attempt at an outbound webhook delivery (idempotent: a duplicate claims nothing)."""
    status = deliver(delivery_id)
    return str(status) if status is not None else None


@shared_task(name=TaskName.SWEEP_WEBHOOK_DELIVERIES)
def sweep_webhook_deliveries() -> int:
    """Retry the outbound webhook deliveries that are due (beat)."""
    return sweep_due()


# acks_late: a run whose worker died is redelivered; its lease sweep resumes it too.
@shared_task(name=TaskName.RUN_EVALS, acks_late=True, reject_on_worker_lost=True)
def run_evals(run_id: str) -> None:
    """Run an eval run's unfinished cases (idempotent: a finished run does nothing)."""
    eval_runs.execute_run(run_id)


@shared_task(name=TaskName.SWEEP_EVAL_RUNS)
def sweep_eval_runs() -> int:
    """Resume or fail eval runs whose worker died (beat)."""
    return eval_runs.sweep_runs()
