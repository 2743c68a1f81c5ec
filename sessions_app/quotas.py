"""Per-tenant quotas and the monthly budget: what one tenant may take of the platform.

Four caps, each a ``Tenant`` column (empty: the ``PLATFORM_QUOTA_*`` default), and a
money budget:

- **running turns**: the tenant's turns not yet ended (queued, running or waiting on an
  approval). Counting every unended turn at admission, rather than the running ones at
  claim time, is what lets the answer be a 429 now instead of a turn queued for ever,
  and running turns can never outnumber the admitted ones.
- **new sessions per minute**: sessions created in any 60 seconds (a sliding window
  over ``Session.created_at``, so a burst at a minute's edge cannot double it).
- **open streams** (NDJSON and WebSocket): counted in Redis (``sessions_app.stream_quota``).
- **stored bytes**: workspace files sent with messages (kept on their turns), key-value
  entries, files and artifacts, summed when more arrive (``admit_bytes``; workspace
  files at admission); a write past the cap is 413.
- **monthly budget**: the summed ``Turn.cost`` of the turns that ended this calendar
  month (UTC); once it reaches the budget, new turns are refused (a budget of 0
  refuses every one).

Atomicity: ``admit_turn`` runs inside the transaction that inserts the turn, after the
inserts, and takes the tenant row's lock (``SELECT ... FOR NO KEY UPDATE``, which leaves
the foreign keys of inserts pointing at the tenant unblocked) before it counts, so a
tenant's admissions are decided one at a time, each counting what the previous one
committed and its own rows: the caps hold under any concurrency. Taken last, the lock is
held only for the count and the commit, not for the writes before them: one tenant's
concurrent sessions start side by side rather than one after another. Postgres is the
one place that sees every web process, and the counts are of rows the admission writes
anyway, so nothing can drift; Redis counters would need their own repair when a process
dies mid-request. The lock orders only one tenant's own admissions; other tenants never
wait on it.

Refusals are 429 ``quota_exceeded`` (or ``budget_exhausted``) with ``Retry-After``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, NoReturn

from django.db import connection
from django.db.models import Sum, TextField
from django.db.models.functions import Cast, Length
from django.utils import timezone

from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agent_platform.models import QUOTA_FIELDS, Tenant
from sessions_app.models import ACTIVE_TURNS, Artifact, KVEntry, Session, StoredFile, Turn

SESSION_WINDOW = timedelta(seconds=60)
# What a refusal for running turns asks the caller to wait: a turn's usual length.
RUNNING_RETRY_SECONDS = 5


class QuotaError(DomainError):
    """A tenant's quota or budget refuses the request (HTTP 429, with ``Retry-After``)."""

    status = 429
    code = "quota_exceeded"

    def __init__(self, message: str, *, retry_after: int, status: int | None = None) -> None:
        super().__init__(message, status=status, headers={"Retry-After": str(max(1, retry_after))})
        self.retry_after = max(1, retry_after)


class QuotaExceeded(QuotaError):
    code = "quota_exceeded"


class BudgetExhausted(QuotaError):
    code = "budget_exhausted"


class StorageQuotaExceeded(QuotaError):
    status = 413
    code = "quota_exceeded"


@dataclass(frozen=True)
class Limits:
    """A tenant's effective caps (its own, else the platform's defaults); None: no budget."""

    running_turns: int
    sessions_per_minute: int
    open_streams: int
    stored_bytes: int
    monthly_budget_usd: Decimal | None

    @classmethod
    def of(cls, tenant: Tenant) -> Limits:
        budget = tenant.monthly_budget_usd
        if budget is None and platform_settings.MONTHLY_BUDGET_USD is not None:
            budget = Decimal(platform_settings.MONTHLY_BUDGET_USD)
        return cls(
            running_turns=_own_or_default(tenant.max_running_turns, "QUOTA_RUNNING_TURNS"),
            sessions_per_minute=_own_or_default(tenant.max_sessions_per_minute, "QUOTA_SESSIONS_PER_MINUTE"),
            open_streams=_own_or_default(tenant.max_open_streams, "QUOTA_OPEN_STREAMS"),
            stored_bytes=_own_or_default(tenant.max_stored_bytes, "QUOTA_STORED_BYTES"),
            monthly_budget_usd=budget,
        )


def _own_or_default(own: int | None, key: str) -> int:
    return int(getattr(platform_settings, key)) if own is None else own


def enabled() -> bool:
    return bool(platform_settings.QUOTAS)


def admit_turn(tenant_id: int, turn_id: str, *, new_session: str | None = None, incoming_bytes: int = 0) -> None:
    """Admit a turn the caller has just written (with ``new_session``, the new session
    it starts; with ``incoming_bytes``, that many bytes of workspace files it carries),
    or refuse it. Call it inside the transaction that writes them, after the writes: it
    locks the tenant's row until that transaction ends, and its counts include them.

    Raises:
        BudgetExhausted: this month's turns cost the budget already.
        QuotaExceeded: the tenant's unended turns or this minute's new sessions would
            pass their cap.
        StorageQuotaExceeded: the files would take the tenant past its stored bytes.
    """
    if not enabled():
        return
    limits = Limits.of(lock_tenant(tenant_id))
    now = timezone.now()
    counts = _counts(tenant_id, now, sessions=new_session is not None, spend=limits.monthly_budget_usd is not None)
    if limits.monthly_budget_usd is not None:
        spent = counts.spent
        if spent >= limits.monthly_budget_usd:
            raise BudgetExhausted(
                f"This tenant's monthly budget of ${limits.monthly_budget_usd} is spent (${spent} this month); "
                "new turns are refused until the month ends or the budget is raised.",
                retry_after=math.ceil((next_month(now) - now).total_seconds()),
            )
    # The counts include this turn and its session: over the cap, not at it, refuses.
    if counts.unended > limits.running_turns:
        raise QuotaExceeded(
            f"This tenant has {limits.running_turns} turns running or queued, its cap; retry once one has ended.",
            retry_after=RUNNING_RETRY_SECONDS,
        )
    if new_session is not None and counts.recent_sessions > limits.sessions_per_minute:
        _refuse_session(tenant_id, limits.sessions_per_minute, now, besides=new_session)
    if incoming_bytes:
        _admit_bytes(tenant_id, limits.stored_bytes, incoming_bytes, written_on=turn_id)


@dataclass(frozen=True)
class _Counts:
    unended: int
    recent_sessions: int
    spent: Decimal


def _counts(tenant_id: int, now: datetime, *, sessions: bool, spend: bool) -> _Counts:
    """The tenant's unended turns, and as asked its sessions of the last minute and this
    month's spend, in one statement: it runs on every admission. It must be a statement
    of its own after the lock's: a statement that waited for a lock still reads what its
    snapshot, taken before the wait, saw."""
    params: list[Any] = [tenant_id, *(str(status) for status in ACTIVE_TURNS)]
    if sessions:
        params += [tenant_id, now - SESSION_WINDOW]
    if spend:
        params += [tenant_id, month_start(now)]
    with connection.cursor() as cursor:
        cursor.execute(_counts_sql(sessions, spend), params)
        row = cursor.fetchone()
    assert row is not None
    spent = row[2] if spend else None
    return _Counts(
        unended=int(row[0]),
        recent_sessions=int(row[1]) if sessions else 0,
        spent=Decimal(str(spent)) if spent is not None else Decimal(0),
    )


@functools.cache
def _counts_sql(sessions: bool, spend: bool) -> str:
    turn, session = Turn._meta.db_table, Session._meta.db_table
    active = ", ".join(["%s"] * len(ACTIVE_TURNS))
    # Table names are ours; the values are parameters.
    parts = [
        f"(SELECT COUNT(*) FROM {turn} t JOIN {session} s ON s.id = t.session_id "  # noqa: S608
        f"WHERE s.tenant_id = %s AND t.status IN ({active}))",
        f"(SELECT COUNT(*) FROM {session} WHERE tenant_id = %s AND created_at > %s)" if sessions else "0",  # noqa: S608
        f"(SELECT SUM(t.cost) FROM {turn} t JOIN {session} s ON s.id = t.session_id "  # noqa: S608
        "WHERE s.tenant_id = %s AND t.ended_at >= %s)"
        if spend
        else "NULL",
    ]
    return "SELECT " + ", ".join(parts)


def lock_tenant(tenant_id: int) -> Tenant:
    """The tenant's quota columns, its row locked until the transaction ends: its
    admissions queue here. Written out on Postgres: every admission starts with it, and
    the ORM would take longer to build the statement than Postgres to run it."""
    if connection.vendor != "postgresql":
        return Tenant.objects.select_for_update(no_key=True).get(pk=tenant_id)
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_SQL, [tenant_id])
        row = cursor.fetchone()
    if row is None:
        raise Tenant.DoesNotExist(tenant_id)
    return Tenant(pk=tenant_id, **dict(zip(QUOTA_FIELDS, row, strict=True)))


# The table and column names are the model's own; the value is a parameter.
_LOCK_SQL = f"SELECT {', '.join(QUOTA_FIELDS)} FROM {Tenant._meta.db_table} WHERE id = %s FOR NO KEY UPDATE"  # noqa: S608


def admit_bytes(tenant_id: int, incoming_bytes: int) -> None:
    """Admit ``incoming_bytes`` more stored bytes of the tenant (a key-value entry, a file,
    an artifact), under the tenant's lock: call it inside the transaction that writes them.

    Raises:
        StorageQuotaExceeded: they would take the tenant past its ``max_stored_bytes``.
    """
    if enabled() and incoming_bytes > 0:
        _admit_bytes(tenant_id, Limits.of(lock_tenant(tenant_id)).stored_bytes, incoming_bytes)


def _admit_bytes(tenant_id: int, cap: int, incoming: int, written_on: str | None = None) -> None:
    """``written_on``: the turn already written with the incoming bytes (not counted twice)."""
    stored = stored_bytes(tenant_id, besides_turn=written_on)
    if stored + incoming > cap:
        raise StorageQuotaExceeded(
            f"This tenant stores {stored} bytes of its {cap}; {incoming} more would pass the cap. "
            "Delete sessions, files, key-value entries or artifacts, or ask for a larger quota.",
            retry_after=60,
        )


def stored_bytes(tenant_id: int, besides_turn: str | None = None) -> int:
    """What the tenant stores: workspace files sent with messages, key-value entries,
    files and inline artifact content (larger artifacts are files); ``besides_turn``
    leaves that turn's files out."""
    as_text = functools.partial(Cast, output_field=TextField())
    turns = Turn.objects.filter(session__tenant_id=tenant_id).exclude(attachments={})
    if besides_turn is not None:
        turns = turns.exclude(pk=besides_turn)
    parts = [
        turns.aggregate(n=Sum(Length(as_text("attachments")))),
        KVEntry.objects.filter(tenant_id=tenant_id).aggregate(n=Sum(Length(as_text("value")))),
        StoredFile.objects.filter(tenant_id=tenant_id).aggregate(n=Sum("size")),
        Artifact.objects.filter(tenant_id=tenant_id).aggregate(n=Sum(Length("content"))),
    ]
    return sum(int(part["n"] or 0) for part in parts)


def _refuse_session(tenant_id: int, cap: int, now: datetime, besides: str) -> NoReturn:
    """Refuse a new session (``besides``, written already); room comes back when the
    cap-th newest of the others leaves the window."""
    recent = Session.objects.filter(tenant_id=tenant_id, created_at__gt=now - SESSION_WINDOW).exclude(pk=besides)
    newest = list(recent.order_by("-created_at").values_list("created_at", flat=True)[cap - 1 : cap])
    leaves = (newest[0] if newest else now) + SESSION_WINDOW
    raise QuotaExceeded(
        f"This tenant started {cap} sessions in the last minute, its cap; retry later.",
        retry_after=math.ceil((leaves - now).total_seconds()),
    )


def active_turns(tenant_id: int, limit: int | None = None) -> int:
    """The tenant's turns not yet ended (counted up to ``limit`` when given)."""
    turns = Turn.objects.filter(session__tenant_id=tenant_id, status__in=ACTIVE_TURNS).values("pk")
    return (turns[:limit] if limit is not None else turns).count()


def month_start(now: datetime) -> datetime:
    now = now.astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(now: datetime) -> datetime:
    start = month_start(now)
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


@dataclass(frozen=True)
class Usage:
    """A tenant's use now against its quotas and budget (the dashboard's table)."""

    tenant: Tenant
    limits: Limits
    unended_turns: int
    sessions_last_minute: int
    stored_bytes: int
    spent_this_month: Decimal
    open_streams: int = 0

    @property
    def budget_left(self) -> Decimal | None:
        budget = self.limits.monthly_budget_usd
        return None if budget is None else max(budget - self.spent_this_month, Decimal(0))


def usage_of(tenant: Tenant) -> Usage:
    now = timezone.now()
    counts = _counts(tenant.pk, now, sessions=True, spend=True)
    return Usage(
        tenant=tenant,
        limits=Limits.of(tenant),
        unended_turns=counts.unended,
        sessions_last_minute=counts.recent_sessions,
        stored_bytes=stored_bytes(tenant.pk),
        spent_this_month=counts.spent,
    )
