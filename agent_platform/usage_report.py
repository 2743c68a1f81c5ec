"""Usage per agent and day, for ``GET /api/v1/usage``: turns, tokens and cost.

A turn's usage (token counts by kind) and cost (USD) are on its row, written when it
ends or parks; a turn counts on the day (UTC) it was created, as on the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, cast

from django.db.models import BigIntegerField, Count, F, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, TruncDate

from agent_platform.models import Tenant
from sessions_app.models import Turn, TurnStatus

# The token kinds a turn's ``usage`` holds (agents.runtime.providers.base.Usage.as_dict).
TOKEN_KINDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


@dataclass(frozen=True)
class UsageFilter:
    """Which turns count: one tenant's, optionally one agent's, between two days (inclusive)."""

    tenant: Tenant
    agent: str | None = None
    first_day: date | None = None
    last_day: date | None = None


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _token_sum(kind: str) -> Coalesce:
    return Coalesce(Sum(Cast(KeyTextTransform(kind, "usage"), BigIntegerField())), 0)


def usage_rows(wanted: UsageFilter) -> QuerySet[Turn, dict[str, Any]]:
    """One row per (day, agent) with turns: ``day``, ``agent``, ``turns``,
    ``failed_turns``, a sum per token kind (``inputTokens``, ...) and ``total_cost``. Unordered:
    the caller orders it (the API pages by day, newest first, then agent)."""
    turns = Turn.objects.filter(session__tenant=wanted.tenant)
    if wanted.agent is not None:
        turns = turns.filter(session__agent__slug=wanted.agent)
    if wanted.first_day is not None:
        turns = turns.filter(created_at__gte=_midnight(wanted.first_day))
    if wanted.last_day is not None and wanted.last_day < date.max:
        turns = turns.filter(created_at__lt=_midnight(wanted.last_day + timedelta(days=1)))
    rows = (
        turns.annotate(day=TruncDate("created_at", tzinfo=UTC), agent=F("session__agent__slug"))
        .values("day", "agent")
        .annotate(
            turns=Count("id"),
            failed_turns=Count("id", filter=Q(status=TurnStatus.FAILED)),
            total_cost=Coalesce(Sum("cost"), Decimal(0)),
            **{kind: _token_sum(kind) for kind in TOKEN_KINDS},
        )
        .order_by()
    )
    # django-stubs spells the row type out in full; a row is a plain dict here.
    return cast("QuerySet[Turn, dict[str, Any]]", rows)
