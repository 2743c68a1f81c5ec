"""The sessions app's Celery tasks by name, the queues they go to, and how the core
sends them.

Code that sends a task sends it by name through the app's task registry, so the core
never imports the task module (which imports the core). This module imports nothing
of the project but ``sessions_app.publish`` (which imports none), so settings can read it.

Queues, all named from one prefix (``PLATFORM_TASK_QUEUE``, by default ``celery``):

- ``<prefix>.turns.<lane>``: turns, one lane per tenant (a stable hash of the tenant
  id, ``PLATFORM["TURN_LANES"]`` lanes). A worker takes messages from its queues in
  turn, so one tenant's backlog waits in its own lane, not in front of every other
  tenant's turns;
- ``<prefix>.hooks``: handing events to hooks and channel handlers;
- ``<prefix>.schedules``: schedules and eval runs;
- ``<prefix>.maintenance``: sweeps and retention.

A worker started with no ``-Q`` serves all of them; ``-Q`` splits them across workers.
"""

from __future__ import annotations

import zlib
from enum import StrEnum
from typing import Any

from celery import current_app

from sessions_app.publish import can_publish, publish


class TaskName(StrEnum):
    # The wire name of run_queued_turn, kept from earlier releases so queued messages still run.
    RUN_TURN = "sessions_app.tasks.run_turn"
    SWEEP_TURNS = "sessions_app.tasks.sweep_turns"
    DISPATCH_EVENTS = "sessions_app.tasks.dispatch_events"
    PRUNE_LOG_LINES = "sessions_app.tasks.prune_log_lines"
    FIRE_REMINDERS = "sessions_app.tasks.fire_reminders"
    SYNC_SCHEDULES = "sessions_app.tasks.sync_schedules"
    FIRE_SCHEDULE = "sessions_app.tasks.fire_schedule"
    DELIVER_WEBHOOK = "sessions_app.tasks.deliver_webhook"
    SWEEP_WEBHOOK_DELIVERIES = "sessions_app.tasks.sweep_webhook_deliveries"
    RUN_EVALS = "sessions_app.tasks.run_evals"
    SWEEP_EVAL_RUNS = "sessions_app.tasks.sweep_eval_runs"
    PRUNE_ARTIFACTS = "sessions_app.tasks.prune_artifacts"
    RUN_RETENTION = "sessions_app.tasks.run_retention"


class QueueKind(StrEnum):
    TURNS = "turns"
    HOOKS = "hooks"
    SCHEDULES = "schedules"
    MAINTENANCE = "maintenance"


KIND_OF_TASK = {
    TaskName.RUN_TURN: QueueKind.TURNS,
    TaskName.DISPATCH_EVENTS: QueueKind.HOOKS,
    TaskName.SWEEP_TURNS: QueueKind.MAINTENANCE,
    TaskName.PRUNE_LOG_LINES: QueueKind.MAINTENANCE,
    TaskName.PRUNE_ARTIFACTS: QueueKind.MAINTENANCE,
    TaskName.RUN_RETENTION: QueueKind.MAINTENANCE,
    TaskName.FIRE_REMINDERS: QueueKind.MAINTENANCE,
    TaskName.SYNC_SCHEDULES: QueueKind.MAINTENANCE,
    TaskName.FIRE_SCHEDULE: QueueKind.SCHEDULES,
    TaskName.DELIVER_WEBHOOK: QueueKind.HOOKS,
    TaskName.SWEEP_WEBHOOK_DELIVERIES: QueueKind.MAINTENANCE,
    TaskName.RUN_EVALS: QueueKind.SCHEDULES,
    TaskName.SWEEP_EVAL_RUNS: QueueKind.MAINTENANCE,
}


def turn_lane(tenant_id: int | str, lanes: int) -> int:
    """The lane of a tenant's turns: stable across processes and restarts."""
    return zlib.crc32(str(tenant_id).encode()) % lanes


def queue_name(prefix: str, kind: QueueKind, lane: int = 0) -> str:
    return f"{prefix}.{kind}.{lane}" if kind == QueueKind.TURNS else f"{prefix}.{kind}"


def all_queues(prefix: str, lanes: int) -> list[str]:
    """Every queue a worker serves by default (the prefix itself too: tasks that name no
    kind go there)."""
    turns = [queue_name(prefix, QueueKind.TURNS, lane) for lane in range(lanes)]
    others = [queue_name(prefix, kind) for kind in QueueKind if kind != QueueKind.TURNS]
    return [prefix, *turns, *others]


def send(name: TaskName, *args: Any, countdown: float | None = None, tenant_id: int | str | None = None) -> None:
    """Send the task ``name`` with ``args`` to its queue (a turn to its tenant's lane).

    Raises:
        kombu.exceptions.OperationalError: the broker cannot be reached.
    """
    conf = current_app.conf
    lane = turn_lane(tenant_id, conf.platform_turn_lanes) if tenant_id is not None else 0
    queue = queue_name(conf.task_default_queue, KIND_OF_TASK[name], lane)
    # Through the registry rather than send_task: the task's own options apply, and
    # so does task_always_eager (tests that run tasks in the caller's thread).
    task = current_app.tasks[name]
    if countdown is None and can_publish(current_app):
        publish(current_app, task, queue, args)  # the same message, a third of the CPU
        return
    options: dict[str, Any] = {"queue": queue} if countdown is None else {"queue": queue, "countdown": countdown}
    task.apply_async(args, **options)
