"""Retention (DESIGN §9.10): what nobody needs any more is deleted, in small batches.

A session is *due* once it has no turn to run (``waiting``, ``completed`` or ``failed``)
and nothing happened on it for its retention period: the agent's
``define_agent(retention_days=...)``, else its tenant's ``retention_days``, else
``PLATFORM["RETENTION_DAYS"]`` (0 anywhere in that chain: kept forever). A due session
goes with its events, turns, approvals, reminders, stored session files, workspace and
idempotency records. A pending reminder holds a session back (something is still to
happen on it). Its artifacts stay: they outlive their session (``session`` set to null)
and follow their own retention (§9.5, ``records.artifacts``).

Besides sessions a pass prunes the trigger tables' bookkeeping past
``PLATFORM["TRIGGER_RECORDS_DAYS"]`` (inbound webhook deliveries, schedule fires,
settled outbound deliveries, idempotency records) and trims the workspaces of sessions
that are still kept but idle for ``PLATFORM["WORKSPACE_IDLE_HOURS"]`` (the next turn
seeds a new one).

Every delete is its own short transaction over at most ``PLATFORM["RETENTION_BATCH_ROWS"]``
rows, so a pass never holds locks for long beside live traffic.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Exists, Model, OuterRef, Q, QuerySet
from django.utils import timezone

from agent_platform.conf import platform_settings, workspaces_dir
from agent_platform.models import Tenant
from agents.models import Agent
from agents.registry import surface_for
from sessions_app.models import (
    Approval,
    Event,
    IdempotencyRecord,
    InboundDelivery,
    Reminder,
    ReminderStatus,
    ScheduleFire,
    ScheduleFireStatus,
    Session,
    SessionStatus,
    Turn,
    WebhookDelivery,
    WebhookDeliveryStatus,
)

logger = logging.getLogger(__name__)

# Sessions with no queued, running or parked turn (a parked turn keeps its session running).
SETTLED = (SessionStatus.WAITING, SessionStatus.COMPLETED, SessionStatus.FAILED)
SESSIONS_PER_BATCH = 200


@dataclass
class RetentionReport:
    """What one pass removed, by kind (``bench/run.py`` and the task's log print it)."""

    sessions: int = 0
    events: int = 0
    workspaces: int = 0
    records: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {"sessions": self.sessions, "events": self.events, "workspaces": self.workspaces, **self.records}


def _agent_days(agent: Agent) -> tuple[bool, int | None]:
    """(whether retention may judge this agent's sessions, its own ``retention_days``).
    An agent whose tree has errors is left alone: its own setting cannot be read."""
    surface = surface_for(agent)
    if surface.errors:
        return False, None
    return True, surface.config.retention_days


def due_sessions(now: datetime | None = None) -> QuerySet[Session]:
    """The sessions the next pass would delete (the admin's "due for removal" too): per
    agent, its own period, else per tenant the tenant's, else the platform's (0: none)."""
    now = now or timezone.now()
    platform_days = platform_settings.RETENTION_DAYS
    tenants = dict(Tenant.objects.filter(retention_days__isnull=False).values_list("pk", "retention_days"))
    rules = Q(pk__in=[])
    for agent in Agent.objects.filter(pk__in=Session.objects.values("agent_id")):
        judged, agent_days = _agent_days(agent)
        if not judged:
            continue
        if agent_days is not None:
            if agent_days:
                rules |= Q(agent=agent, updated_at__lt=now - timedelta(days=agent_days))
            continue
        for tenant_id, tenant_days in tenants.items():
            if tenant_days:
                rules |= Q(agent=agent, tenant_id=tenant_id, updated_at__lt=now - timedelta(days=tenant_days))
        if platform_days:
            rules |= Q(agent=agent, updated_at__lt=now - timedelta(days=platform_days)) & ~Q(tenant_id__in=tenants)
    held = Q(Exists(Reminder.objects.filter(session=OuterRef("pk"), status=ReminderStatus.PENDING)))
    return Session.objects.filter(rules, status__in=SETTLED).exclude(held)


def run_retention(now: datetime | None = None) -> RetentionReport:
    """One retention pass (the beat task's body); returns what it removed."""
    now = now or timezone.now()
    report = RetentionReport()
    due = due_sessions(now)
    while batch := _next_batch(due):
        removed, events = remove_sessions(due, batch)
        if not removed:
            break  # the rest are locked by live work or no longer due: the next pass
        report.sessions, report.events = report.sessions + removed, report.events + events
    report.records = prune_records(now)
    report.workspaces = trim_workspaces(now)
    if report.sessions or report.workspaces or any(report.records.values()):
        logger.info("retention removed %s", report.as_dict())
    return report


def _next_batch(due: QuerySet[Session]) -> list[str]:
    """The oldest due sessions holding about ``RETENTION_BATCH_ROWS`` events between them
    (at least one session, however long its log)."""
    rows = due.order_by("updated_at").values_list("pk", "next_event_index")[:SESSIONS_PER_BATCH]
    batch: list[str] = []
    events = 0
    for session_id, count in rows:
        if batch and events + count > platform_settings.RETENTION_BATCH_ROWS:
            break
        batch.append(session_id)
        events += count
    return batch


def remove_sessions(due: QuerySet[Session], ids: list[str]) -> tuple[int, int]:
    """Delete those of ``ids`` that are still due, with everything that is theirs, in
    one transaction; returns (sessions, events) deleted. A session a follow-up has just
    locked is skipped (it is no longer idle)."""
    with transaction.atomic():
        locked = due.filter(pk__in=ids).select_for_update(skip_locked=True, of=("self",))
        owners = dict(locked.values_list("pk", "principal_id"))
        gone = list(owners)
        if not gone:
            return 0, 0
        # The log first, in one statement (the collector would read every row otherwise).
        events, _ = Event.objects.filter(session_id__in=gone).delete()
        # Then what hangs on the turns, and the turns in one statement: left to the
        # collector, each turn's delete would look for its events by turn (no index).
        Approval.objects.filter(session_id__in=gone).delete()
        Reminder.objects.filter(session_id__in=gone).delete()
        with connection.cursor() as cursor:
            marks = ", ".join(["%s"] * len(gone))
            cursor.execute(f"DELETE FROM {Turn._meta.db_table} WHERE session_id IN ({marks})", gone)  # noqa: S608
        Session.objects.filter(pk__in=gone).delete()  # files, states, A/B, deliveries: CASCADE
        # Found through the owners' unique (principal, key) index, then the answer's session.
        IdempotencyRecord.objects.filter(principal_id__in=set(owners.values()), response__sessionId__in=gone).delete()
    for session_id in gone:
        _remove_workspace(session_id)
    return len(gone), events


def prune_records(now: datetime) -> dict[str, int]:
    """Bookkeeping rows past ``TRIGGER_RECORDS_DAYS``: by then no retry or replay they
    guard against can still arrive. A pending webhook delivery is kept (it may retry)."""
    cutoff = now - timedelta(days=platform_settings.TRIGGER_RECORDS_DAYS)
    return {
        "inboundDeliveries": _delete_in_batches(InboundDelivery.objects.filter(received_at__lt=cutoff)),
        "scheduleFires": _delete_in_batches(
            ScheduleFire.objects.filter(created_at__lt=cutoff).exclude(status=ScheduleFireStatus.RUNNING)
        ),
        "webhookDeliveries": _delete_in_batches(
            WebhookDelivery.objects.filter(created_at__lt=cutoff).exclude(status=WebhookDeliveryStatus.PENDING)
        ),
        "idempotencyRecords": _delete_in_batches(IdempotencyRecord.objects.filter(created_at__lt=cutoff)),
    }


def trim_workspaces(now: datetime) -> int:
    """Delete workspace folders nobody is about to use: a kept session's that has been
    idle for ``WORKSPACE_IDLE_HOURS`` (its next turn seeds a new one), and leftovers of
    sessions that no longer exist. Returns how many folders went."""
    hours = platform_settings.WORKSPACE_IDLE_HOURS
    root = workspaces_dir(platform_settings.VAR_DIR)
    if not hours or not root.is_dir():
        return 0
    cutoff = now - timedelta(hours=hours)
    folders = {path.name: path for path in root.iterdir() if path.is_dir() and not path.is_symlink()}
    trimmed = 0
    names = sorted(folders)
    for start in range(0, len(names), SESSIONS_PER_BATCH):
        chunk = names[start : start + SESSIONS_PER_BATCH]
        kept = dict(Session.objects.filter(pk__in=chunk).values_list("pk", "updated_at"))
        busy = set(Session.objects.filter(pk__in=chunk).exclude(status__in=SETTLED).values_list("pk", flat=True))
        for name in chunk:
            if name in busy:
                continue
            # A folder of no session may be one being made right now: only old ones go.
            last = kept.get(name) or _modified(folders[name])
            if last < cutoff:
                shutil.rmtree(folders[name], ignore_errors=True)
                trimmed += 1
    return trimmed


def _modified(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.get_current_timezone())


def _remove_workspace(session_id: str) -> None:
    folder = workspaces_dir(platform_settings.VAR_DIR) / session_id
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)


def _delete_in_batches(rows: QuerySet[Model]) -> int:
    """Delete ``rows`` at most ``RETENTION_BATCH_ROWS`` at a time, each batch its own
    transaction; returns how many went. (Only for models nothing else cascades from
    beyond their own rows.)"""
    batch = platform_settings.RETENTION_BATCH_ROWS
    total = 0
    while True:
        with transaction.atomic():
            keys = list(rows.values_list("pk", flat=True)[:batch])
            if not keys:
                return total
            rows.model._default_manager.filter(pk__in=keys).delete()
        total += len(keys)
        if len(keys) < batch:
            return total
