"""``POST /<slug>/v1/tools/:name``: a tool called directly, as a script would."""

from __future__ import annotations

import pytest

from sessions_app.models import TurnStatus
from sessions_app.tests.factories import SessionFactory, TurnFactory

# Transactional: tools reach the database from their own thread, as in a server.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def lab(live_agents_dir, settings):
    from agents.registry import get_agent

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    return get_agent("lab")


def call(client, tool, body, slug="lab"):
    return client.post(f"/{slug}/v1/tools/{tool}", body, format="json")


def test_a_read_tool_runs_and_answers_with_its_result(alice, client_for, lab):
    response = call(client_for(alice), "get_weather", {"input": {"city": "Lyon"}}, slug="weather")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["isError"] is False and body["toolName"] == "get_weather"
    assert body["result"]["city"] == "Lyon"
    assert body["callId"].startswith("call_") and body["durationMs"] >= 0


def test_host_storage_is_the_tenants_own(alice, mallory, client_for, lab):
    assert call(client_for(alice), "remember", {"input": {"key": "pet", "value": "cat"}}).json()["result"] == "kept pet"
    assert call(client_for(alice), "recall", {"input": {"key": "pet"}}).json()["result"] == "cat"
    assert call(client_for(mallory), "recall", {"input": {"key": "pet"}}).json()["result"] == "nothing"


def test_an_unknown_tool_is_404_with_the_available_names(alice, client_for, lab):
    response = call(client_for(alice), "teleport", {"input": {}})
    assert response.status_code == 404
    assert response.json()["message"] == "No tool 'teleport'. Available: close_issue, recall, remember, wait."


@pytest.mark.parametrize(
    "body",
    [{"input": {"key": 3}}, {"input": {}}, {"input": {"key": "a", "extra": 1}}, {"input": "not an object"}],
)
def test_schema_invalid_input_is_400(alice, client_for, lab, body):
    response = call(client_for(alice), "recall", body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_a_write_tool_on_a_busy_session_is_409_and_a_read_tool_runs_beside_the_turn(alice, client_for, lab):
    session = SessionFactory(principal=alice, agent=lab)
    TurnFactory(session=session, status=TurnStatus.RUNNING)
    client = client_for(alice)
    busy = call(client, "remember", {"input": {"key": "k", "value": "v"}, "sessionId": session.id})
    assert busy.status_code == 409 and busy.json()["error"] == "session_busy"
    beside = call(client, "recall", {"input": {"key": "k"}, "sessionId": session.id})
    assert beside.status_code == 200


def test_a_dry_run_session_stubs_a_write_tool(alice, client_for, lab):
    session = SessionFactory(principal=alice, agent=lab, dry_run=True)
    response = call(client_for(alice), "remember", {"input": {"key": "k", "value": "v"}, "sessionId": session.id})
    assert response.json()["result"] == {"stubbed": True, "toolName": "remember", "args": {"key": "k", "value": "v"}}
    assert call(client_for(alice), "recall", {"input": {"key": "k"}}).json()["result"] == "nothing"


def test_another_principals_session_is_403(bob, alice, client_for, lab):
    session = SessionFactory(principal=alice, agent=lab)
    response = call(client_for(bob), "recall", {"input": {"key": "k"}, "sessionId": session.id})
    assert response.status_code == 403


def test_an_agent_execution_tool_is_400(alice, client_for, tmp_path, settings):
    from agents.tests.trees import write_tree

    write_tree(
        tmp_path / "scripted",
        {
            "agent/instructions.md": "x",
            "agent/tools/ls.py": """
                from agents.sdk import tool


                @tool(execution="agent")
                def ls() -> list:
                    \"\"\"List the workspace.\"\"\"
                    return []
            """,
        },
    )
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path}
    response = call(client_for(alice), "ls", {"input": {}}, slug="scripted")
    assert response.status_code == 400
    assert response.json()["error"] == "agent_tool"
