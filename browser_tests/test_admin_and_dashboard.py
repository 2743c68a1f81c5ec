"""The admin and the dashboard in a real browser: staff sign in with Django's login,
read a session's event timeline, decide a parked call, and see their tenant's charts."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from agent_platform.auth import get_dev_principal
from agent_platform.tests.factories import staff_user_for
from browser_tests.conftest import assert_controls_labelled, assert_fits_width
from sessions_app.models import Session, TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory
from sessions_app.tests.live import types

PASSWORD = "correct horse battery staple"  # a test account's


def sign_in(page, principal) -> None:
    """Django's own admin login, as the staff account linked to ``principal``."""
    user = staff_user_for(principal, password=PASSWORD)
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/admin/")


def past_usage(principal, days: int = 6) -> None:
    """Turns on earlier days with tokens and cost, so the charts have a shape."""
    agents = [AgentFactory(slug="weather"), AgentFactory(slug="triage")]
    for day in range(1, days + 1):
        at = timezone.now() - timedelta(days=day)
        for number in range(day % 3 + 1):
            session = SessionFactory(principal=principal, agent=agents[number % 2], created_at=at, title=f"day {day}")
            TurnFactory(
                session=session,
                created_at=at,
                status=TurnStatus.FAILED if (day + number) % 4 == 0 else TurnStatus.COMPLETED,
                usage={"inputTokens": 400 * day + 100 * number, "outputTokens": 90 * day},
                cost=Decimal("0.0031") * day,
            )


def test_staff_sign_in_and_read_a_sessions_event_timeline(page, live, alice, screenshot):
    client = live(alice, "lab")
    session_id = client.start("hello there")["sessionId"]
    events = client.wait_for(session_id, "session.waiting")
    sign_in(page, alice)
    screenshot(page, "admin-home")
    assert "Acting as acme/alice" in page.locator("#acting-as").text_content()

    page.goto("/admin/sessions_app/session/")
    page.get_by_role("link", name=session_id).click()
    page.wait_for_url("**/session/*/change/")  # the admin quotes "_" in ids as "_5F"
    timeline = page.locator("#events-group tbody tr.has_original")
    assert timeline.count() == len(events)
    shown = [cell.strip() for cell in page.locator("#events-group td.field-type").all_inner_texts()]
    assert shown == types(events)
    assert "hello there" in page.locator("#events-group").inner_text()
    playground = page.get_by_role("link", name="Open in playground")
    assert playground.get_attribute("href") == f"/lab/playground?session={session_id}"
    assert_controls_labelled(page)
    screenshot(page, "session-timeline")


def test_staff_approve_a_parked_call_and_the_turn_finishes(page, live, alice, screenshot):
    client = live(alice, "lab")
    session_id = client.start('/call close_issue {"issue": 7}')["sessionId"]
    client.wait_for(session_id, "action.approval_requested")
    sign_in(page, alice)
    page.goto("/admin/sessions_app/approval/")
    page.locator("#result_list tbody a").first.click()
    page.wait_for_url("**/approval/*/change/")
    page.get_by_label("Reason (optional)").fill("looks right")
    assert_controls_labelled(page)
    screenshot(page, "approval-pending")
    page.get_by_role("button", name="Approve").click()
    assert "Approved close_issue" in page.locator(".messagelist").inner_text()
    events = client.wait_for(session_id, "session.waiting")
    assert [e["data"]["output"] for e in events if e["type"] == "action.result"] == ["closed #7"]
    screenshot(page, "approval-decided")


def test_the_dashboard_charts_a_tenants_activity(page, live, alice, mallory, screenshot):
    client = live(alice, "lab")
    client.wait_for(client.start("today's work")["sessionId"], "session.waiting")
    past_usage(alice)
    SessionFactory(principal=mallory, agent=AgentFactory(slug="umbrella-only"), title="umbrella secret")
    sign_in(page, alice)
    page.get_by_role("link", name="Dashboard").click()
    page.wait_for_url("**/admin/dashboard/")
    assert "tenant acme" in page.locator("h1").inner_text()
    charts = page.locator("svg.chart")
    assert charts.count() == 5
    for index in range(5):
        assert charts.nth(index).is_visible()
    assert page.locator("svg.chart rect title").count() > 10  # bars, each with its value
    sessions = Session.objects.filter(tenant=alice.tenant).count()
    assert page.locator("#total-sessions").inner_text() == str(sessions)
    body = page.locator("main").inner_text()
    assert "umbrella" not in body
    page.get_by_label("Period").select_option("30")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/admin/dashboard/?days=30")
    assert "last 30 days" in page.locator("h1").inner_text()
    assert_controls_labelled(page)
    screenshot(page, "dashboard")


def test_the_dashboard_fits_a_phone(phone_page, screenshot):
    past_usage(get_dev_principal())
    phone_page.goto("/")
    phone_page.get_by_role("link", name="Dashboard").first.click()
    phone_page.wait_for_url("**/admin/dashboard/")
    assert "tenant local" in phone_page.locator("h1").inner_text()  # dev mode, loopback
    assert phone_page.locator("svg.chart").count() == 5
    assert_fits_width(phone_page)
    assert_controls_labelled(phone_page)
    screenshot(phone_page, "dashboard-phone")


def test_the_index_links_each_served_agents_playground(page, screenshot):
    page.goto("/")
    link = page.get_by_role("link", name="Open the lab playground")
    assert link.get_attribute("href") == "/lab/playground"
    assert page.get_by_role("link", name="Dashboard").first.get_attribute("href") == "/admin/dashboard/"
    screenshot(page, "index-playground-links")


def test_a_sessions_timeline_fits_a_phone(phone_page, live, alice, screenshot):
    client = live(alice, "lab")
    session_id = client.start("hello from a phone")["sessionId"]
    events = client.wait_for(session_id, "session.waiting")
    sign_in(phone_page, alice)
    phone_page.goto("/admin/sessions_app/session/")
    phone_page.get_by_role("link", name=session_id).click()
    phone_page.wait_for_url("**/session/*/change/")
    assert phone_page.locator("#events-group tbody tr.has_original").count() == len(events)
    assert_fits_width(phone_page)
    screenshot(phone_page, "session-timeline-phone")
