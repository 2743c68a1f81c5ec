"""The dashboard: daily activity, failure rate, tokens and cost per agent, latest
sessions, for the viewer's tenant only (a superuser picks any)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agent_platform.dashboard import build_dashboard, daily_activity, usage_by_agent
from agent_platform.models import Tenant
from agent_platform.tests.factories import staff_user_for
from sessions_app.models import Session, Turn, TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 3, 10, 15, 0, tzinfo=UTC)


def turn(session: Session, *, status=TurnStatus.COMPLETED, at=NOW, tokens=(0, 0), cost=None) -> Turn:
    return TurnFactory(
        session=session,
        status=status,
        created_at=at,
        usage={"inputTokens": tokens[0], "outputTokens": tokens[1]},
        cost=cost,
    )


@pytest.fixture
def activity(alice, mallory):
    """acme: two agents over three days; umbrella: one costly session today."""
    weather, triage = AgentFactory(slug="weather"), AgentFactory(slug="triage")
    today = SessionFactory(principal=alice, agent=weather, created_at=NOW, title="acme today")
    turn(today, tokens=(100, 20), cost=Decimal("0.010"))
    turn(today, status=TurnStatus.FAILED, tokens=(50, 0), cost=Decimal("0.002"))
    turn(today, status=TurnStatus.RUNNING)
    yesterday = SessionFactory(principal=alice, agent=triage, created_at=NOW - timedelta(days=1), title="acme old")
    turn(yesterday, at=NOW - timedelta(days=1), tokens=(1000, 300), cost=Decimal("0.5"))
    old = SessionFactory(principal=alice, agent=triage, created_at=NOW - timedelta(days=30))
    turn(old, at=NOW - timedelta(days=30), tokens=(9, 9))
    theirs = SessionFactory(principal=mallory, agent=weather, created_at=NOW, title="umbrella secret")
    turn(theirs, status=TurnStatus.FAILED, tokens=(7777, 7777), cost=Decimal("42"))
    return today, theirs


def test_daily_buckets_count_sessions_turns_and_failures_per_day(activity, alice):
    days = daily_activity(alice.tenant, 7, NOW)
    assert [d.day.isoformat() for d in days] == [f"2025-03-{n:02d}" for n in range(4, 11)]
    assert [(d.sessions, d.turns, d.failed_turns) for d in days[-2:]] == [(1, 1, 0), (1, 3, 1)]
    assert days[-1].failure_rate == 0.5  # one failed of two ended; the running one is not counted
    assert days[-2].failure_rate == 0
    assert days[0].failure_rate is None and days[0].sessions == 0


def test_usage_per_agent_sums_tokens_and_cost_costliest_first(activity, alice):
    usage = usage_by_agent(alice.tenant, 7, NOW)
    assert [(a.agent, a.turns, a.failed_turns, a.input_tokens, a.output_tokens, a.cost) for a in usage] == [
        ("triage", 1, 0, 1000, 300, Decimal("0.5")),
        ("weather", 3, 1, 150, 20, Decimal("0.012")),
    ]


def test_all_tenants_include_every_tenants_turns(activity):
    dashboard = build_dashboard(None, 7, NOW)
    assert dashboard.sessions == 3
    assert dashboard.cost == Decimal("42.512")
    assert dashboard.tokens == 1000 + 300 + 150 + 20 + 7777 * 2


def test_a_longer_period_reaches_older_turns(activity, alice):
    assert build_dashboard(alice.tenant, 7, NOW).tokens == 1470
    assert build_dashboard(alice.tenant, 90, NOW).tokens == 1470 + 18


def test_turns_without_usage_count_as_zero_tokens(alice):
    session = SessionFactory(principal=alice)
    TurnFactory(session=session, created_at=NOW, usage={})
    [usage] = usage_by_agent(alice.tenant, 7, NOW)
    assert (usage.input_tokens, usage.output_tokens, usage.cost) == (0, 0, Decimal(0))


# --- the page ---------------------------------------------------------------------


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def recent(alice, mallory):
    """Sessions in the current period, so the page (which uses today) shows them."""
    weather = AgentFactory(slug="weather")
    ours = SessionFactory(principal=alice, agent=weather, title="acme weekly report")
    TurnFactory(session=ours, status=TurnStatus.COMPLETED, usage={"inputTokens": 1234, "outputTokens": 56})
    theirs = SessionFactory(principal=mallory, agent=AgentFactory(slug="umbrella-bot"), title="umbrella secret")
    TurnFactory(session=theirs, status=TurnStatus.FAILED, usage={"inputTokens": 999999}, cost=Decimal("13.37"))
    return ours, theirs


def test_staff_see_their_tenants_charts_and_latest_sessions(recent, alice):
    ours, _ = recent
    response = signed_in(staff_user_for(alice)).get("/admin/dashboard/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "tenant acme" in html
    assert html.count('<svg class="chart"') == 5
    assert ours.pk in html and "acme weekly report" in html
    assert f"/weather/playground?session={ours.pk}" in html
    assert '<dd id="total-tokens">1,290</dd>' in html
    assert '<dd id="total-failure-rate">0%</dd>' in html


def test_staff_of_one_tenant_never_see_another_tenants_data(recent, mallory):
    ours, _ = recent
    client = signed_in(staff_user_for(mallory))
    for url in ["/admin/dashboard/", "/admin/dashboard/?tenant=acme", "/admin/dashboard/?days=90"]:
        html = client.get(url).content.decode()
        assert "tenant umbrella" in html
        assert ours.pk not in html and "acme" not in html and "weather" not in html
        assert 'id="dashboard-tenant"' not in html  # no tenant selector


def test_a_superuser_sees_every_tenant_and_can_pick_one(recent, admin_user):
    ours, theirs = recent
    client = signed_in(admin_user)
    html = client.get("/admin/dashboard/").content.decode()
    assert "all tenants" in html and ours.pk in html and theirs.pk in html
    assert '<label for="dashboard-tenant">Tenant</label>' in html
    html = client.get("/admin/dashboard/?tenant=umbrella&days=30").content.decode()
    assert "tenant umbrella" in html and theirs.pk in html and ours.pk not in html
    assert '<dd id="total-failure-rate">100%</dd>' in html
    assert '<dd id="total-cost">$13.3700</dd>' in html


def test_anonymous_visitors_are_sent_to_the_admin_login(recent):
    response = Client().get("/admin/dashboard/?days=7")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/dashboard/%3Fdays%3D7"


def test_in_dev_mode_a_loopback_visitor_sees_the_local_tenant(recent, settings):
    settings.PLATFORM = {**settings.PLATFORM, "DEV": True}
    local = Tenant.objects.get_or_create(slug="local")[0]
    mine = SessionFactory(principal__tenant=local, principal__name="dev", title="local work")
    html = Client().get("/admin/dashboard/").content.decode()
    assert "tenant local" in html and mine.pk in html
    assert recent[0].pk not in html and recent[1].pk not in html
    forwarded = Client().get("/admin/dashboard/", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert forwarded.status_code == 302


def test_a_staff_account_without_a_principal_is_refused(recent):
    user = User.objects.create_user(username="drifter", is_staff=True)
    assert signed_in(user).get("/admin/dashboard/").status_code == 403


@pytest.mark.parametrize("query", ["days=5", "days=abc", "days=", "tenant=nobody"])
def test_bad_parameters_are_a_400_json_error(recent, admin_user, query):
    response = signed_in(admin_user).get(f"/admin/dashboard/?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_every_dashboard_control_is_labelled(recent, admin_user):
    html = signed_in(admin_user).get("/admin/dashboard/").content.decode()
    assert '<label for="dashboard-days">Period</label>' in html
    assert '<meta name="viewport"' in html
    assert '<button type="submit">Show</button>' in html
