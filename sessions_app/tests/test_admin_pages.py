"""The admin's session pages: the event timeline, approvals decided through the
service, artifact downloads; each scoped to the staff user's tenant."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agent_platform.tests.factories import admin_url, staff_user_for
from agents.events import EventType
from sessions_app.eventlog import append_event
from sessions_app.models import Approval, ApprovalStatus, Artifact, Session, TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_admin(alice) -> Client:
    return signed_in(staff_user_for(alice))


def session_with_events(principal, title: str) -> Session:
    session = SessionFactory(principal=principal, agent=AgentFactory(slug="weather"), title=title)
    turn = TurnFactory(session=session)
    append_event(session.pk, EventType.SESSION_STARTED, {"agent": "weather"})
    append_event(session.pk, EventType.MESSAGE_RECEIVED, {"text": "what's the weather <b>here</b>?"}, turn.pk)
    append_event(session.pk, EventType.TURN_COMPLETED, {"usage": {"inputTokens": 12}, "text": "x" * 500}, turn.pk)
    return session


# --- sessions -------------------------------------------------------------------------


def test_the_session_page_shows_its_events_in_order_read_only(alice, alice_admin):
    session = session_with_events(alice, "acme session")
    response = alice_admin.get(admin_url(session, "change"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Event timeline" in html
    positions = [html.index(t) for t in ("session.started", "message.received", "turn.completed")]
    assert positions == sorted(positions)
    assert "what&#x27;s the weather &lt;b&gt;here&lt;/b&gt;?" in html  # data shown compact and escaped
    assert "x" * 200 not in html  # long data is cut
    assert not re.search(r'name="events-\d+-type"', html)  # no editable event fields


def test_the_timeline_costs_a_fixed_number_of_queries(alice, alice_admin, django_assert_max_num_queries):
    session = session_with_events(alice, "acme session")
    turns = [TurnFactory(session=session) for _ in range(5)]
    for number in range(60):
        append_event(session.pk, EventType.STEP_STARTED, {"step": number}, turns[number % 5].pk)
    with django_assert_max_num_queries(25):
        html = alice_admin.get(admin_url(session, "change")).content.decode()
    assert html.count("step.started") >= 60
    assert f'href="{admin_url(turns[0], "change")}"' in html


def test_the_session_page_links_to_the_playground(alice, alice_admin):
    session = session_with_events(alice, "acme session")
    html = alice_admin.get(admin_url(session, "change")).content.decode()
    assert f'href="/weather/playground?session={session.pk}"' in html
    listing = alice_admin.get("/admin/sessions_app/session/").content.decode()
    assert f'href="/weather/playground?session={session.pk}"' in listing


def test_a_long_session_shows_its_latest_events(alice, alice_admin, monkeypatch):
    monkeypatch.setattr("sessions_app.admin.TIMELINE_EVENTS", 2)
    session = session_with_events(alice, "acme session")
    html = alice_admin.get(admin_url(session, "change")).content.decode()
    assert "session.started" not in html.split("Event timeline")[1]
    assert "turn.completed" in html and "the timeline shows the last 2" in html


def test_a_session_with_its_timeline_can_still_be_saved(alice, alice_admin):
    session = session_with_events(alice, "acme session")
    url = admin_url(session, "change")
    page = alice_admin.get(url)
    management = page.context["inline_admin_formsets"][0].formset.management_form
    data = {f"{management.prefix}-{name}": value for name, value in management.initial.items()}
    data.update(
        agent=session.agent_id,
        principal=alice.pk,
        channel="http",
        mode="chat",
        purpose="live",
        status="waiting",
        title="renamed",
    )
    response = alice_admin.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    session.refresh_from_db()
    assert session.title == "renamed"
    assert session.events.count() == 3


# --- approvals -------------------------------------------------------------------------


def parked_call(principal, call_id: str) -> Approval:
    session = SessionFactory(principal=principal, agent=AgentFactory(slug="weather"))
    turn = TurnFactory(session=session, status=TurnStatus.PARKED)
    return Approval.objects.create(session=session, turn=turn, call_id=call_id, tool_name="refund", args_sha256="0")


def test_staff_approve_selected_calls_as_their_principal_and_the_turn_resumes(alice, alice_admin):
    approval = parked_call(alice, "call-1")
    response = alice_admin.post(
        "/admin/sessions_app/approval/",
        {"action": "approve_selected", "_selected_action": [approval.pk]},
        follow=True,
    )
    assert "Approved refund (call-1) as acme/alice" in response.content.decode()
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by) == (ApprovalStatus.APPROVED, alice)
    assert approval.turn.status == TurnStatus.QUEUED  # the service queued it to resume


def test_a_call_is_denied_from_its_page_with_a_reason(alice, alice_admin):
    approval = parked_call(alice, "call-2")
    page = alice_admin.get(admin_url(approval, "change")).content.decode()
    assert '<label for="decide-reason">' in page and 'value="deny"' in page
    response = alice_admin.post(admin_url(approval, "decide"), {"decision": "deny", "reason": "too much"}, follow=True)
    assert "Denied refund (call-2)" in response.content.decode()
    approval.refresh_from_db()
    assert (approval.status, approval.reason) == (ApprovalStatus.DENIED, "too much")
    assert 'id="decide-form"' not in response.content.decode()  # decided: no more buttons


def test_a_decided_call_cannot_be_decided_again(alice, alice_admin):
    approval = parked_call(alice, "call-3")
    alice_admin.post(admin_url(approval, "decide"), {"decision": "approve"})
    response = alice_admin.post(admin_url(approval, "decide"), {"decision": "deny"}, follow=True)
    assert "is not waiting for a decision" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.APPROVED


def test_staff_cannot_decide_another_tenants_calls(alice, mallory, alice_admin):
    theirs = parked_call(mallory, "call-umbrella")
    response = alice_admin.post(admin_url(theirs, "decide"), {"decision": "approve"})
    assert response.status_code in (302, 404)
    alice_admin.post("/admin/sessions_app/approval/", {"action": "approve_selected", "_selected_action": [theirs.pk]})
    theirs.refresh_from_db()
    assert theirs.status == ApprovalStatus.PENDING


def test_approvals_are_not_edited_by_hand(alice, alice_admin):
    approval = parked_call(alice, "call-4")
    alice_admin.post(admin_url(approval, "change"), {"status": "approved"})
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING
    assert 'name="status"' not in alice_admin.get(admin_url(approval, "change")).content.decode()


def test_a_decision_needs_a_principal(alice, admin_user):
    approval = parked_call(alice, "call-5")
    response = signed_in(admin_user).post(admin_url(approval, "decide"), {"decision": "approve"}, follow=True)
    assert "Link your account to a principal" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.PENDING


def test_a_decision_is_approve_or_deny(alice, alice_admin):
    approval = parked_call(alice, "call-6")
    response = alice_admin.post(admin_url(approval, "decide"), {"decision": "maybe"}, follow=True)
    assert "Choose approve or deny." in response.content.decode()
    assert alice_admin.get(admin_url(approval, "decide")).status_code == 405


# --- artifacts -------------------------------------------------------------------------


def artifact(principal, name: str, content: bytes = b"%PDF-1.7", content_type: str = "application/pdf") -> Artifact:
    session = SessionFactory(principal=principal, agent=AgentFactory(slug="weather"))
    return Artifact.objects.create(
        session=session, kind="report", name=name, content=content, size=len(content), content_type=content_type
    )


def test_an_artifact_downloads_as_an_attachment(alice, alice_admin):
    report = artifact(alice, "q1 report.pdf")
    page = alice_admin.get(admin_url(report, "change")).content.decode()
    url = admin_url(report, "download")
    assert f'href="{url}"' in page
    response = alice_admin.get(url)
    assert response.status_code == 200
    assert response.content == b"%PDF-1.7"
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="q1 report.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "sandbox"


@pytest.mark.parametrize(
    ("name", "content_type", "filename", "served_as"),
    [
        ("../../etc/passwd", "text/plain", 'filename="passwd"', "text/plain"),
        ("C:\\reports\\q1.pdf", "application/pdf", 'filename="q1.pdf"', "application/pdf"),
        (
            'evil"\r\nSet-Cookie: x=1.html',
            "text/html\r\nX-Evil: 1",
            'filename="evil_Set-Cookie_ x=1.html"',
            "application/octet-stream",
        ),
        ("...", "", 'filename="artifact"', "application/octet-stream"),
        ("résumé.txt", "text/plain; charset=utf-8", "filename*=utf-8''r%C3%A9sum%C3%A9.txt", "text/plain"),
    ],
)
def test_downloaded_names_and_types_are_made_safe(alice, alice_admin, name, content_type, filename, served_as):
    row = artifact(alice, name, b"data", content_type)
    response = alice_admin.get(admin_url(row, "download"))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f"attachment; {filename}"
    assert response["Content-Type"] == served_as
    assert "Set-Cookie" not in response.headers and "X-Evil" not in response.headers


def test_the_download_link_works_for_an_id_the_admin_must_quote(alice, alice_admin):
    # Ids are random base32; about one in two hundred starts "_22".."_26", which the
    # admin's unquote reads as a quoted '"', '#', '$', '%' or '&' unless the link is quoted.
    session = SessionFactory(principal=alice, agent=AgentFactory(slug="weather"))
    row = Artifact.objects.create(
        id="art_22" + "a" * 24, session=session, kind="report", name="r.txt", content=b"ok", size=2
    )
    page = alice_admin.get(admin_url(row, "change")).content.decode()
    link = re.search(r'href="([^"]+/download/)"', page)
    assert link is not None
    response = alice_admin.get(link.group(1))
    assert response.status_code == 200 and response.content == b"ok"


def test_another_tenants_artifact_is_not_found(alice, mallory, alice_admin):
    theirs = artifact(mallory, "umbrella-secret.pdf", b"secret")
    response = alice_admin.get(admin_url(theirs, "download"))
    assert response.status_code == 404
    assert b"secret" not in response.content


def test_downloads_need_a_staff_sign_in(alice):
    row = artifact(alice, "report.pdf")
    response = Client().get(admin_url(row, "download"))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


# --- the admin's frame ---------------------------------------------------------------------


def test_admin_pages_link_the_dashboard_and_agents_and_say_who_staff_act_as(alice_admin):
    html = alice_admin.get("/admin/").content.decode()
    assert '<a href="/admin/dashboard/">Dashboard</a>' in html
    assert '<a href="/">Agents and playgrounds</a>' in html
    assert "Acting as <strong>acme/alice</strong>" in html
