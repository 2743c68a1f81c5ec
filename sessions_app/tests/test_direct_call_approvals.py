"""A tool that needs a person's approval cannot be run at once by calling it directly
(``POST /<slug>/v1/tools/:name``), and every direct call on a session is in its log.

The attack: the triage example's ``close_issue`` (approval on every call) and
``set_severity`` with ``critical`` (approval for that value) called over HTTP, with no
session and bound to one's own session."""

from __future__ import annotations

import pytest

from sessions_app.models import Event
from sessions_app.tests.factories import SessionFactory

# Transactional: tools reach the database from their own thread, as in a server.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def triage(live_agents_dir, settings):
    from agents.registry import get_agent

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    return get_agent("triage")


def call(client, tool: str, body: dict):
    return client.post(f"/triage/v1/tools/{tool}", body, format="json")


GATED = [
    ("close_issue", {"number": 7, "reason": "completed"}),
    ("set_severity", {"number": 7, "severity": "critical"}),
]


@pytest.mark.parametrize(("tool", "arguments"), GATED, ids=[tool for tool, _ in GATED])
def test_a_call_that_needs_approval_is_refused_with_409(alice, client_for, triage, tool, arguments):
    response = call(client_for(alice), tool, {"input": arguments})
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "approval_required"
    assert tool in body["message"] and "approv" in body["message"]
    assert "closed" not in response.content.decode() and "labels" not in body


@pytest.mark.parametrize(("tool", "arguments"), GATED, ids=[tool for tool, _ in GATED])
def test_bound_to_ones_own_session_it_is_refused_too_and_nothing_ran(alice, client_for, triage, tool, arguments):
    session = SessionFactory(principal=alice, agent=triage)
    response = call(client_for(alice), tool, {"input": arguments, "sessionId": session.pk})
    assert response.status_code == 409 and response.json()["error"] == "approval_required"
    assert not Event.objects.filter(session=session, type="action.result").exists()


def test_the_same_tool_runs_when_its_arguments_need_no_approval(alice, client_for, triage):
    response = call(client_for(alice), "set_severity", {"input": {"number": 7, "severity": "low"}})
    assert response.status_code == 200
    assert response.json()["result"] == {"number": 7, "labels": ["severity:low"]}


def test_a_direct_call_on_a_session_is_recorded_in_its_log(alice, client_for, triage):
    session = SessionFactory(principal=alice, agent=triage)
    client = client_for(alice)
    answer = call(client, "set_severity", {"input": {"number": 7, "severity": "low"}, "sessionId": session.pk}).json()
    logged = client.get(f"/triage/v1/session/{session.pk}/events").json()["events"]
    assert [(e["type"], "turnId" in e) for e in logged] == [("actions.requested", False), ("action.result", False)]
    requested, result = (e["data"] for e in logged)
    assert requested == {
        "calls": [{"callId": answer["callId"], "toolName": "set_severity", "args": {"number": 7, "severity": "low"}}],
        "direct": True,
    }
    assert result == {
        "callId": answer["callId"],
        "toolName": "set_severity",
        "output": {"number": 7, "labels": ["severity:low"]},
        "isError": False,
    }
