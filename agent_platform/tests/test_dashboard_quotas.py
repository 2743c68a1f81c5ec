"""The dashboard's turn latency per day (p50/p95 beside the failure rate) and each
tenant's use against its quotas and budget, for the viewer's tenant only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from agent_platform.dashboard import daily_latency
from agent_platform.models import Tenant
from agent_platform.tests.factories import staff_user_for
from sessions_app.models import TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 10, 15, 0, tzinfo=UTC)


def ended_turn(session, seconds: float, *, day=NOW, status=TurnStatus.COMPLETED, cost=None):
    return TurnFactory(
        session=session,
        status=status,
        created_at=day,
        started_at=day,
        ended_at=day + timedelta(seconds=seconds),
        cost=cost,
    )


def test_latency_per_day_is_the_median_and_95th_percentile_of_ended_turns(alice, mallory):
    weather = AgentFactory(slug="weather")
    ours = SessionFactory(principal=alice, agent=weather, created_at=NOW)
    for seconds in (1, 2, 3, 4, 100):
        ended_turn(ours, seconds)
    ended_turn(ours, 7, day=NOW - timedelta(days=1), status=TurnStatus.FAILED)
    TurnFactory(session=ours, status=TurnStatus.RUNNING, created_at=NOW, started_at=NOW)  # not ended: left out
    ended_turn(SessionFactory(principal=mallory, agent=weather, created_at=NOW), 5000)  # another tenant's
    days = daily_latency(Tenant.objects.get(slug="acme"), 7, NOW)
    assert len(days) == 7 and days[0].p50 is None
    assert (days[-2].p50, days[-2].p95) == (7.0, 7.0)
    assert days[-1].p50 == 3.0
    assert days[-1].p95 == pytest.approx(4 + (100 - 4) * 0.8)  # between the two largest, as percentile_cont


def test_the_quota_table_shows_the_viewers_tenant_against_its_caps_and_budget(alice, mallory):
    Tenant.objects.filter(slug="acme").update(max_running_turns=7, monthly_budget_usd=Decimal("20"))
    weather = AgentFactory(slug="weather")
    session = SessionFactory(principal=alice, agent=weather)
    TurnFactory(session=session, status=TurnStatus.QUEUED)
    ended_turn(session, 1, day=timezone.now(), cost=Decimal("2.50"))
    SessionFactory(principal=mallory, agent=weather)
    client = Client()
    client.force_login(staff_user_for(alice))
    html = client.get("/admin/dashboard/").content.decode()
    table = html[html.index('id="quota-usage"') : html.index("</table>", html.index('id="quota-usage"'))]
    assert "<td>acme</td>" in table and "umbrella" not in table
    assert "<td>1 / 7</td>" in table  # the queued turn against its cap
    assert "2.50 / 20.00" in table
    assert 'id="chart-latency"' in html
