"""What the dashboard shows: sessions and turns per day, failure rate and turn latency
(p50/p95) per day, token usage and cost per agent, and each tenant's use against its
quotas and budget, for one tenant or for all of them.

Plain functions over the Session and Turn rows; the view renders the results as
server-side SVG (``agent_platform.charts``). A turn's usage and cost are on its
row (written when it ends or parks), so nothing here reads the event log.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import (
    Aggregate,
    BigIntegerField,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, Extract, TruncDate
from django.utils import timezone
from django.utils.safestring import SafeString

from agent_platform.charts import Series, bar_chart, column_chart, dollars, percent, seconds
from agent_platform.models import Tenant
from sessions_app import quotas, stream_quota
from sessions_app.models import Session, Turn, TurnStatus

# The periods a viewer can pick, in days; the first is the default.
PERIODS = (14, 7, 30, 90)
LATEST_SESSIONS = 10
# Tenants in the quotas table when the dashboard shows every tenant.
QUOTA_TENANTS = 50


@dataclass(frozen=True)
class DayActivity:
    day: date
    sessions: int = 0
    turns: int = 0
    completed_turns: int = 0
    failed_turns: int = 0

    @property
    def failure_rate(self) -> float | None:
        """Failed among the turns that ended; None when none ended."""
        ended = self.completed_turns + self.failed_turns
        return self.failed_turns / ended if ended else None


@dataclass(frozen=True)
class DayLatency:
    """How long the turns started that day took, start to end, in seconds (None: none ended)."""

    day: date
    p50: float | None = None
    p95: float | None = None


@dataclass(frozen=True)
class AgentUsage:
    agent: str
    turns: int
    failed_turns: int
    input_tokens: int
    output_tokens: int
    cost: Decimal

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Dashboard:
    days: list[DayActivity]
    agents: list[AgentUsage]
    latest_sessions: list[Session]
    latency: list[DayLatency]
    quotas: list[quotas.Usage]

    @property
    def sessions(self) -> int:
        return sum(day.sessions for day in self.days)

    @property
    def turns(self) -> int:
        return sum(day.turns for day in self.days)

    @property
    def failure_rate(self) -> float | None:
        failed = sum(day.failed_turns for day in self.days)
        ended = failed + sum(day.completed_turns for day in self.days)
        return failed / ended if ended else None

    @property
    def tokens(self) -> int:
        return sum(agent.total_tokens for agent in self.agents)

    @property
    def cost(self) -> Decimal:
        return sum((agent.cost for agent in self.agents), Decimal(0))


def period_start(days: int, now: datetime | None = None) -> datetime:
    """Midnight (UTC) opening a period of ``days`` calendar days ending today."""
    today = (now or timezone.now()).astimezone(UTC).date()
    return datetime.combine(today - timedelta(days=days - 1), time.min, tzinfo=UTC)


def _sessions(tenant: Tenant | None) -> QuerySet[Session]:
    sessions = Session.objects.all()
    return sessions if tenant is None else sessions.filter(tenant=tenant)


def _turns(tenant: Tenant | None) -> QuerySet[Turn]:
    turns = Turn.objects.all()
    return turns if tenant is None else turns.filter(session__tenant=tenant)


def _token_sum(key: str) -> Coalesce:
    return Coalesce(Sum(Cast(KeyTextTransform(key, "usage"), BigIntegerField())), 0)


def daily_activity(tenant: Tenant | None, days: int, now: datetime | None = None) -> list[DayActivity]:
    """One bucket per calendar day (UTC) of the period, oldest first, empty days included."""
    since = period_start(days, now)
    day = TruncDate("created_at", tzinfo=UTC)
    session_counts = {
        row["day"]: row["n"]
        for row in _sessions(tenant)
        .filter(created_at__gte=since)
        .annotate(day=day)
        .values("day")
        .annotate(n=Count("id"))
    }
    turn_counts = {
        row["day"]: (row["n"], row["completed"], row["failed"])
        for row in _turns(tenant)
        .filter(created_at__gte=since)
        .annotate(day=day)
        .values("day")
        .annotate(
            n=Count("id"),
            completed=Count("id", filter=Q(status=TurnStatus.COMPLETED)),
            failed=Count("id", filter=Q(status=TurnStatus.FAILED)),
        )
    }
    buckets = []
    for offset in range(days):
        current = since.date() + timedelta(days=offset)
        turns, completed, failed = turn_counts.get(current, (0, 0, 0))
        buckets.append(DayActivity(current, session_counts.get(current, 0), turns, completed, failed))
    return buckets


def usage_by_agent(tenant: Tenant | None, days: int, now: datetime | None = None) -> list[AgentUsage]:
    """Turns, tokens and cost per agent over the period, costliest first."""
    rows = (
        _turns(tenant)
        .filter(created_at__gte=period_start(days, now))
        .values("session__agent__slug")
        .annotate(
            n=Count("id"),
            failed=Count("id", filter=Q(status=TurnStatus.FAILED)),
            input_tokens=_token_sum("inputTokens"),
            output_tokens=_token_sum("outputTokens"),
            total_cost=Coalesce(Sum("cost"), Decimal(0)),
        )
    )
    usage = [
        AgentUsage(
            agent=row["session__agent__slug"],
            turns=row["n"],
            failed_turns=row["failed"],
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            cost=row["total_cost"],
        )
        for row in rows
    ]
    return sorted(usage, key=lambda agent: (-agent.cost, -agent.total_tokens, agent.agent))


def daily_latency(tenant: Tenant | None, days: int, now: datetime | None = None) -> list[DayLatency]:
    """The median and 95th percentile of the ended turns' durations per calendar day
    (UTC, by start), oldest first, empty days included. A parked turn's wait for its
    approval counts: it is what the caller waited."""
    since = period_start(days, now)
    ended = _turns(tenant).filter(
        started_at__gte=since, ended_at__isnull=False, status__in=(TurnStatus.COMPLETED, TurnStatus.FAILED)
    )
    found: dict[date, tuple[float | None, float | None]] = {}
    if connection.vendor == "postgresql":
        seconds = Extract(ExpressionWrapper(F("ended_at") - F("started_at"), DurationField()), "epoch")
        rows = (
            ended.annotate(day=TruncDate("started_at", tzinfo=UTC))
            .values("day")
            .annotate(p50=Percentile(seconds, fraction=0.5), p95=Percentile(seconds, fraction=0.95))
        )
        found = {row["day"]: (row["p50"], row["p95"]) for row in rows}
    else:  # the embedded form's SQLite has no percentile: its few turns are sorted here
        by_day: dict[date, list[float]] = {}
        for started, ended_at in ended.values_list("started_at", "ended_at"):
            if started is None or ended_at is None:  # filtered out above; for the type checker
                continue
            by_day.setdefault(started.astimezone(UTC).date(), []).append((ended_at - started).total_seconds())
        found = {day: (_percentile(sorted(v), 0.5), _percentile(sorted(v), 0.95)) for day, v in by_day.items()}
    buckets = []
    for offset in range(days):
        current = since.date() + timedelta(days=offset)
        p50, p95 = found.get(current, (None, None))
        buckets.append(DayLatency(current, None if p50 is None else float(p50), None if p95 is None else float(p95)))
    return buckets


class Percentile(Aggregate):
    """Postgres's ``percentile_cont``: the value below which ``fraction`` of the rows fall."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float) -> None:
        super().__init__(expression, fraction=float(fraction))


def _percentile(values: list[float], fraction: float) -> float:
    """``percentile_cont`` over sorted ``values`` (linear between the two nearest)."""
    position = (len(values) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def quota_usage(tenant: Tenant | None, limit: int = QUOTA_TENANTS) -> list[quotas.Usage]:
    """The tenant's use against its quotas and budget; for every tenant, the first
    ``limit`` by slug."""
    tenants = [tenant] if tenant is not None else list(Tenant.objects.order_by("slug")[:limit])
    return [
        dataclasses.replace(quotas.usage_of(each), open_streams=stream_quota.open_streams(each.pk)) for each in tenants
    ]


def latest_sessions(tenant: Tenant | None, count: int = LATEST_SESSIONS) -> list[Session]:
    return list(_sessions(tenant).select_related("agent", "principal__tenant").order_by("-created_at")[:count])


def build_dashboard(tenant: Tenant | None, days: int, now: datetime | None = None) -> Dashboard:
    """Everything the dashboard shows for ``tenant`` (None: every tenant)."""
    return Dashboard(
        days=daily_activity(tenant, days, now),
        agents=usage_by_agent(tenant, days, now),
        latest_sessions=latest_sessions(tenant),
        latency=daily_latency(tenant, days, now),
        quotas=quota_usage(tenant),
    )


def charts_for(dashboard: Dashboard) -> dict[str, SafeString]:
    """The dashboard's five charts as inline SVG."""
    labels = [day.day.strftime("%m-%d") for day in dashboard.days]
    agents = [agent.agent for agent in dashboard.agents]
    return {
        "activity": column_chart(
            "Sessions and turns per day",
            labels,
            [
                Series("sessions", [day.sessions for day in dashboard.days]),
                Series("turns", [day.turns for day in dashboard.days]),
            ],
        ),
        "failures": column_chart(
            "Failure rate per day (failed among ended turns)",
            labels,
            [Series("failure rate", [day.failure_rate for day in dashboard.days])],
            value_format=percent,
            axis_format=percent,
            top=1.0,
        ),
        "latency": column_chart(
            "Turn latency per day, p50 and p95 (seconds)",
            labels,
            [
                Series("p50", [day.p50 for day in dashboard.latency]),
                Series("p95", [day.p95 for day in dashboard.latency]),
            ],
            value_format=seconds,
            integer=False,
        ),
        "tokens": bar_chart(
            "Tokens per agent",
            agents,
            [
                Series("input", [agent.input_tokens for agent in dashboard.agents]),
                Series("output", [agent.output_tokens for agent in dashboard.agents]),
            ],
        ),
        "cost": bar_chart(
            "Cost per agent (USD)",
            agents,
            [Series("cost", [float(a.cost) for a in dashboard.agents])],
            value_format=dollars,
        ),
    }
