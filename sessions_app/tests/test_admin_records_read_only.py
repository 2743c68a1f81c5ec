"""What the platform recorded cannot be changed or removed in the admin.

The attack: tenant staff delete an event row (a permanent gap in the session's log, and a
stream resuming there waits forever), or edit a turn's status, cost, usage or parked
state, or a session's principal. Events, turns and approvals are read-only and
undeletable (events for superusers too: the log is append-only); on a session page only
the title may change. Each test posts to the admin's real pages and checks the rows."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from agent_platform.tests.factories import staff_user_for
from agents.events import EventType
from sessions_app.eventlog import append_event
from sessions_app.models import Approval, Session, SessionStatus, Turn, TurnStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_admin(alice) -> Client:
    client = Client()
    client.force_login(staff_user_for(alice))
    return client


@pytest.fixture
def recorded(alice) -> tuple[Session, Turn, Approval]:
    session = SessionFactory(principal=alice, agent=AgentFactory(slug="weather"), title="acme session")
    turn = TurnFactory(session=session, status=TurnStatus.RUNNING, usage={"inputTokens": 12}, cost=Decimal("0.5"))
    for event_type in (EventType.SESSION_STARTED, EventType.MESSAGE_RECEIVED, EventType.TURN_STARTED):
        append_event(session.pk, event_type, {"text": "hi"}, turn.pk)
    approval = Approval.objects.create(
        session=session, turn=turn, call_id="call_close", tool_name="close_issue", args_sha256="0"
    )
    return session, turn, approval


def event_indexes(session: Session) -> list[int]:
    return list(session.events.order_by("index").values_list("index", flat=True))


@pytest.mark.parametrize("who", ["staff", "superuser"])
def test_no_one_deletes_an_event(alice_admin, admin_client, recorded, who):
    client = alice_admin if who == "staff" else admin_client
    session, _, _ = recorded
    middle = session.events.get(index=1)
    assert client.post(f"/admin/sessions_app/event/{middle.pk}/delete/", {"post": "yes"}).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [str(middle.pk)], "post": "yes"}
    client.post("/admin/sessions_app/event/", bulk)
    assert event_indexes(session) == [0, 1, 2]


@pytest.mark.parametrize("who", ["staff", "superuser"])
def test_no_one_edits_an_event(alice_admin, admin_client, recorded, who):
    client = alice_admin if who == "staff" else admin_client
    session, _, _ = recorded
    event = session.events.get(index=2)
    response = client.post(f"/admin/sessions_app/event/{event.pk}/change/", {"type": "turn.completed", "index": 9})
    assert response.status_code == 403
    event.refresh_from_db()
    assert (event.type, event.index) == (EventType.TURN_STARTED, 2)


def test_staff_cannot_edit_a_turns_status_cost_usage_or_parked_state(alice_admin, recorded):
    _, turn, _ = recorded
    forged = {"status": "completed", "cost": "0", "usage": "{}", "parked_state": '{"pending": []}', "attempts": 0}
    response = alice_admin.post(f"/admin/sessions_app/turn/{turn.pk}/change/", forged)
    assert response.status_code == 403
    turn.refresh_from_db()
    assert (turn.status, turn.cost, turn.usage, turn.parked_state) == (
        TurnStatus.RUNNING,
        Decimal("0.5"),
        {"inputTokens": 12},
        None,
    )
    assert alice_admin.get(f"/admin/sessions_app/turn/{turn.pk}/change/").status_code == 200  # still viewable


def test_staff_cannot_delete_a_turn_and_its_events_with_it(alice_admin, recorded):
    session, turn, _ = recorded
    assert alice_admin.post(f"/admin/sessions_app/turn/{turn.pk}/delete/", {"post": "yes"}).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [turn.pk], "post": "yes"}
    alice_admin.post("/admin/sessions_app/turn/", bulk)
    assert Turn.objects.filter(pk=turn.pk).exists()
    assert event_indexes(session) == [0, 1, 2]


def test_staff_cannot_edit_or_delete_an_approval(alice_admin, recorded):
    _, _, approval = recorded
    url = f"/admin/sessions_app/approval/{approval.pk}/"
    assert alice_admin.post(url + "change/", {"status": "approved", "tool_name": "x"}).status_code == 403
    assert alice_admin.post(url + "delete/", {"post": "yes"}).status_code == 403
    approval.refresh_from_db()
    assert (approval.status, approval.tool_name) == ("pending", "close_issue")


def test_on_a_session_page_staff_change_only_the_title(alice_admin, alice, bob, recorded):
    session, _, _ = recorded
    url = f"/admin/sessions_app/session/{session.pk}/change/"
    page = alice_admin.get(url)
    assert page.status_code == 200, (page.status_code, page.get("Location"))
    html = page.content.decode()
    assert 'name="title"' in html
    for field in ("principal", "status", "mode", "agent", "continuation_token", "dry_run"):
        assert f'name="{field}"' not in html, field
    management = page.context["inline_admin_formsets"][0].formset.management_form
    data = {f"{management.prefix}-{name}": value for name, value in management.initial.items()}
    data.update(title="renamed", principal=bob.pk, status="failed", mode="task", dry_run="on")
    assert alice_admin.post(url, data).status_code == 302
    session.refresh_from_db()
    assert session.title == "renamed"
    assert (session.principal, session.status, session.mode, session.dry_run) == (
        alice,
        SessionStatus.RUNNING,
        "chat",
        False,
    )


def test_staff_cannot_add_or_delete_a_session(alice_admin, recorded):
    session, _, _ = recorded
    assert alice_admin.get("/admin/sessions_app/session/add/").status_code == 403
    assert alice_admin.post(f"/admin/sessions_app/session/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Session.objects.filter(pk=session.pk).exists()
    assert event_indexes(session) == [0, 1, 2]
