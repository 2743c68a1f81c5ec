"""Schedules: one django-celery-beat ``PeriodicTask`` per discovered schedule, and what a
fire does.

- **Sync** (``sync_schedules``, a beat task every ``PLATFORM_SCHEDULE_SYNC_SECONDS`` and
  once when beat starts): every served agent's schedules become ``PeriodicTask`` rows named
  ``schedule:<slug>:<id>`` on a UTC ``CrontabSchedule``, calling ``fire_schedule(slug, id)``
  with ``expires`` so a message that waited too long in the broker is dropped. Rows of
  schedules that are gone (removed, disabled by an extension, the agent not served) are
  deleted; in dev mode every such row is, since schedules there never fire by themselves.
- **Fire** (``fire_schedule``): the fire time is the cron's latest time at or before now
  (or the one due within ``EARLY_SEND``: beat may send a fire a little early).
  A ``ScheduleFire`` row, UNIQUE per ``(agent, schedule_id, scheduled_for)``, is claimed
  before any session is made, so a second beat's message for the same time does
  nothing. A fire more than ``PLATFORM["SCHEDULE_GRACE_SECONDS"]`` late (beat was down
  across it and sent it on restart) is recorded ``missed`` and logged, never run late.
- **Run** (``run_schedule``): a prompt schedule starts one ``task`` session on the
  ``schedule`` channel, owned by the agent's ``schedule`` service principal; a handler
  schedule is called with ``ScheduleArgs``. ``run_schedule_now`` is the same for
  ``agent dispatch`` and the dev route, at any time.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import current_app
from celery.schedules import crontab
from croniter import croniter
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agents import sdk
from agents.channels import SCHEDULE_CHANNEL
from agents.discovery import AgentSurface, extension_context
from agents.models import Agent, AgentSource
from agents.registry import agent_folders, get_agent, served_row, surface_for
from agents.sdk._context import ScheduleArgs
from agents.secrets import declared_secrets
from sessions_app import services
from sessions_app.authored_channels import ChannelSender, run_to_completion
from sessions_app.host import host_for_agent
from sessions_app.models import ScheduleFire, ScheduleFireStatus, SessionMode, Turn, TurnStatus
from sessions_app.queues import QueueKind, TaskName, queue_name
from sessions_app.quotas import QuotaError
from sessions_app.triggers.principals import service_principal, trigger_tenant

logger = logging.getLogger(__name__)

CHANNEL = SCHEDULE_CHANNEL
TASK_PREFIX = "schedule:"
# A fire sent at most this long before a fire time is that fire time's (cron fires are a
# minute apart at least, so nothing else can be meant).
EARLY_SEND = timedelta(seconds=5)


class UnknownSchedule(DomainError):
    status, code = 404, "schedule_not_found"


class ScheduleFailed(DomainError):
    status, code = 502, "schedule_handler_failed"


# --- sync ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wanted:
    slug: str
    schedule_id: str
    cron: str


@dataclass
class SyncResult:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def task_name(slug: str, schedule_id: str) -> str:
    return f"{TASK_PREFIX}{slug}:{schedule_id}"


def served_agents_everywhere() -> list[Agent]:
    """Every agent served by this platform: the folders of AGENTS_DIR and every tenant's
    deployed agents."""
    shared = [agent for slug in agent_folders() if (agent := get_agent(slug)) is not None]
    deployed = [
        agent
        for row in Agent.objects.filter(source=AgentSource.DEPLOYMENT).order_by("slug")
        if (agent := served_row(row.slug, row)) is not None
    ]
    return shared + deployed


def wanted_schedules(agents: list[Agent]) -> dict[str, Wanted]:
    """The PeriodicTask each served schedule should have, by name. An agent whose tree
    has errors is not served, so its schedules do not fire."""
    wanted: dict[str, Wanted] = {}
    for agent in agents:
        surface = surface_for(agent)
        if surface.errors:
            continue
        for schedule_id, entry in surface.schedules.items():
            wanted[task_name(agent.slug, schedule_id)] = Wanted(agent.slug, schedule_id, entry.value.cron)
    return wanted


def _crontab_fields(cron: str) -> dict[str, str]:
    minute, hour, day_of_month, month_of_year, day_of_week = cron.split()
    return {
        "minute": minute,
        "hour": hour,
        "day_of_month": day_of_month,
        "month_of_year": month_of_year,
        "day_of_week": day_of_week,
    }


def _beat_can_read(cron: str) -> bool:
    """Celery's crontab reads less than croniter (no ``7`` for Sunday, no ``L``)."""
    fields = _crontab_fields(cron)
    try:
        crontab(**fields)
    except ValueError:
        return False
    return True


def _crontab(cron: str) -> CrontabSchedule:
    """The UTC crontab of ``cron``: the first such row, or a new one (the table has no
    UNIQUE on its fields, so two concurrent syncs may each make one; either does)."""
    fields = {**_crontab_fields(cron), "timezone": "UTC"}
    return CrontabSchedule.objects.filter(**fields).order_by("pk").first() or CrontabSchedule.objects.create(**fields)


def grace() -> timedelta:
    return timedelta(seconds=platform_settings.SCHEDULE_GRACE_SECONDS)


def sync_schedules() -> SyncResult:
    """Make the ``schedule:*`` PeriodicTasks match the served agents' schedules (none in
    dev mode); a row is written only when it changes, so beat does not reload for nothing."""
    wanted = {} if platform_settings.DEV else wanted_schedules(served_agents_everywhere())
    result = SyncResult()
    queue = queue_name(current_app.conf.task_default_queue, QueueKind.SCHEDULES)
    expires = max(1, int(grace().total_seconds()))
    existing = {task.name: task for task in PeriodicTask.objects.filter(name__startswith=TASK_PREFIX)}
    used = {task.crontab_id for task in existing.values() if task.crontab_id is not None}
    for name, task in existing.items():
        if name not in wanted:
            task.delete()
            result.removed.append(name)
    for name, want in wanted.items():
        if not _beat_can_read(want.cron):
            logger.warning(
                "schedule %r of agent %r is not run by beat: cron %r uses syntax Celery's crontab lacks",
                want.schedule_id,
                want.slug,
                want.cron,
                extra={"agent_slug": want.slug},
            )
            if name in existing:
                existing[name].delete()
                result.removed.append(name)
            continue
        schedule = _crontab(want.cron)
        fields: dict[str, Any] = {
            "task": str(TaskName.FIRE_SCHEDULE),
            "crontab": schedule,
            "args": json.dumps([want.slug, want.schedule_id]),
            "queue": queue,
            "expire_seconds": expires,
            "enabled": True,
        }
        task = existing.get(name)
        if task is None:
            try:
                with transaction.atomic():
                    PeriodicTask.objects.create(name=name, **fields)
            # A concurrent sync (beat's start, its timer) made it: django-celery-beat checks
            # the name itself (ValidationError), else the database does.
            except (IntegrityError, ValidationError):
                continue
            result.added.append(name)
        elif any(getattr(task, key) != value for key, value in fields.items()):
            for key, value in fields.items():
                setattr(task, key, value)
            task.save()
            result.changed.append(name)
    # The crontabs our rows no longer use (other PeriodicTasks' are left alone).
    CrontabSchedule.objects.filter(pk__in=used, periodictask__isnull=True).delete()
    if result.added or result.changed or result.removed:
        logger.info("schedules synced: added %s, changed %s, removed %s", result.added, result.changed, result.removed)
    return result


# --- fire ----------------------------------------------------------------------------------


def fire_time(cron: str, now: datetime) -> datetime:
    """The cron's latest fire time at or before ``now`` (UTC)."""
    # croniter's get_prev is strictly before its start: start a microsecond after now.
    latest: datetime = croniter(cron, now.astimezone(UTC) + timedelta(microseconds=1)).get_prev(datetime)
    return latest.astimezone(UTC)


def fire_schedule(slug: str, schedule_id: str, now: datetime | None = None) -> ScheduleFire | None:
    """Beat's fire of a schedule: run it once for its fire time, or skip (a duplicate, a
    missed fire, a schedule that is gone). Returns the fire's row when this call claimed it."""
    now = now or timezone.now()
    agent = get_agent(slug)
    if agent is None:
        logger.warning("schedule %r of agent %r skipped: the agent is not served", schedule_id, slug)
        return None
    tags = {"agent_slug": slug, "tenant_id": agent.tenant_id}
    surface = surface_for(agent)
    entry = surface.schedules.get(schedule_id)
    if platform_settings.DEV or surface.errors or entry is None:
        why = "dev mode" if platform_settings.DEV else "the agent has errors" if surface.errors else "it is gone"
        logger.warning("schedule %r skipped: %s", schedule_id, why, extra=tags)
        return None
    # Beat may send a fire a little before its time (Celery's crontab estimate drops the
    # microseconds); two beats, one early and one on time, must name the same fire time.
    scheduled_for = fire_time(entry.value.cron, now + EARLY_SEND)
    late = now - scheduled_for
    missed = late > grace()
    fire = _claim(agent, schedule_id, scheduled_for, manual=False, missed=missed)
    if fire is None:
        logger.info("schedule %r at %s already fired (another beat)", schedule_id, scheduled_for, extra=tags)
        return None
    if missed:
        logger.warning(
            "schedule %r fire at %s skipped: missed while beat was down (%.0f s late, grace %.0f s)",
            schedule_id,
            scheduled_for.isoformat(),
            late.total_seconds(),
            grace().total_seconds(),
            extra=tags,
        )
        return fire
    _run(agent, surface, schedule_id, entry.value, fire)
    return fire


def _claim(
    agent: Agent, schedule_id: str, scheduled_for: datetime, *, manual: bool, missed: bool
) -> ScheduleFire | None:
    status = ScheduleFireStatus.MISSED if missed else ScheduleFireStatus.RUNNING
    try:
        with transaction.atomic():
            return ScheduleFire.objects.create(
                agent=agent,
                tenant=trigger_tenant(agent),
                schedule_id=schedule_id,
                scheduled_for=scheduled_for,
                manual=manual,
                status=status,
            )
    except IntegrityError:
        return None


def run_schedule_now(agent: Agent, surface: AgentSurface, schedule_id: str) -> dict[str, Any]:
    """Run a schedule once, now (``agent dispatch --schedule``, the dev route).

    Raises:
        UnknownSchedule: the agent has no schedule ``schedule_id`` (the message names its ids).
        ScheduleFailed: the schedule's handler raised (sessions it sent are kept).
    """
    entry = surface.schedules.get(schedule_id)
    if entry is None:
        known = ", ".join(sorted(surface.schedules)) or "none"
        raise UnknownSchedule(f"Agent {agent.slug!r} has no schedule {schedule_id!r}; its schedules: {known}.")
    fire = _claim(agent, schedule_id, timezone.now(), manual=True, missed=False)
    if fire is None:  # two manual runs in the same microsecond
        fire = _claim(agent, schedule_id, timezone.now() + timedelta(microseconds=1), manual=True, missed=False)
    assert fire is not None
    _run(agent, surface, schedule_id, entry.value, fire)
    if fire.status == ScheduleFireStatus.FAILED:
        raise ScheduleFailed(f"The handler of schedule {schedule_id!r} failed: {fire.error}")
    return {"scheduleId": schedule_id, "sessionIds": list(fire.session_ids)}


def _run(agent: Agent, surface: AgentSurface, schedule_id: str, schedule: sdk.Schedule, fire: ScheduleFire) -> None:
    """Start the fire's sessions (a prompt's one, or what the handler sends) and record them."""
    principal = service_principal(agent, CHANNEL)
    sender = ChannelSender(agent, surface, principal, CHANNEL, platform_settings.DEFAULT_MODEL)
    if schedule.prompt is not None:
        try:
            session, _ = services.start_session(
                agent,
                surface,
                principal,
                message=schedule.prompt,
                mode=SessionMode.TASK,
                title=schedule.title or schedule_id,
                channel=CHANNEL,
                default_model=platform_settings.DEFAULT_MODEL,
            )
        except QuotaError as refused:  # the tenant's quota or budget: this fire is not run, the next may be
            logger.warning("schedule %r fire refused: %s", schedule_id, refused, extra={"agent_slug": agent.slug})
            fire.status, fire.error = ScheduleFireStatus.FAILED, f"{refused.code}: {refused}"
            fire.save(update_fields=["status", "error"])
            return
        fire.session_ids = [session.pk]
        fire.status = ScheduleFireStatus.DONE
        fire.save(update_fields=["session_ids", "status"])
        return
    sent: list[str] = []

    async def send(
        message: str, *, key: str | None = None, mode: str = "task", title: str | None = None
    ) -> dict[str, str]:
        answer = await sender(message, key=key, mode=mode, title=title or schedule_id)
        if answer["sessionId"] not in sent:
            sent.append(answer["sessionId"])
        return answer

    args = ScheduleArgs(
        schedule_id=schedule_id,
        fired_at=fire.scheduled_for.astimezone(UTC),
        host=host_for_agent(principal.tenant_id, agent),
        send=send,
        extension=extension_context(surface.extensions, surface.schedules[schedule_id].extension),
        secrets=declared_secrets(agent, surface.config.secrets),
    )
    assert schedule.handler is not None
    try:
        run_to_completion(schedule.handler, args)
    except Exception as error:  # the contract: a failing handler is logged and the fire marked failed
        logger.error(
            "schedule %r handler failed: %s: %s",
            schedule_id,
            type(error).__name__,
            error,
            exc_info=error,
            extra={"agent_slug": agent.slug, "tenant_id": agent.tenant_id},
        )
        fire.status, fire.error = ScheduleFireStatus.FAILED, f"{type(error).__name__}: {error}"
    else:
        fire.status = ScheduleFireStatus.DONE
    fire.session_ids = sent
    fire.save(update_fields=["session_ids", "status", "error"])


def dispatch_message(agent: Agent, surface: AgentSurface, message: str) -> dict[str, Any]:
    """``agent dispatch --message``: one new ``task`` session on the ``schedule`` channel,
    owned by the agent's ``schedule`` principal, as a prompt schedule would start."""
    principal = service_principal(agent, CHANNEL)
    session, _ = services.start_session(
        agent,
        surface,
        principal,
        message=message,
        mode=SessionMode.TASK,
        channel=CHANNEL,
        default_model=platform_settings.DEFAULT_MODEL,
    )
    return {"sessionIds": [session.pk]}


def wait_for_sessions(session_ids: list[str], timeout: float, poll: float = 0.2) -> bool:
    """Wait until no turn of these sessions is queued or running (``agent dispatch
    --wait``); True when each one's last turn completed, False when one failed, is
    waiting for an approval, or ``timeout`` seconds passed first."""
    busy = (TurnStatus.QUEUED, TurnStatus.RUNNING)
    deadline = time.monotonic() + timeout
    while Turn.objects.filter(session_id__in=session_ids, status__in=busy).exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    for session_id in session_ids:
        last = Turn.objects.filter(session_id=session_id).order_by("-created_at").first()
        if last is None or last.status != TurnStatus.COMPLETED:
            return False
    return True
