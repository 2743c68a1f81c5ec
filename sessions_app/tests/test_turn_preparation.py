"""A turn is prepared once, with its full context: a dynamic ``instructions.py`` that
reads ``ctx.host`` works, and the model is told exactly the text that the session
workspace's ``AGENTS.md`` holds.

The model is the OpenAI SDK's, pointed at a local server that speaks the OpenAI wire
format and keeps every request it gets; turns run in process through ``execute_turn``
(the Celery task's body)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.tests.runtime.model_server import ScriptedModelServer
from agents.tests.trees import write_tree
from sessions_app.models import Event, KVEntry, Turn
from sessions_app.turn_worker import execute_turn

pytestmark = pytest.mark.django_db(transaction=True)

AGENT_PY = 'from agents.sdk import define_agent\n\nagent = define_agent(model="openai:gpt-test")\n'
DYNAMIC_INSTRUCTIONS = """
from agents.sdk import define_instructions


async def render(ctx):
    tone = await ctx.host.kv.get("tone")
    return f"Answer in a {tone or 'plain'} tone. You serve session {ctx.session.id}."


instructions = define_instructions(render)
"""


@pytest.fixture
def model_server():
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def tuned(tmp_path: Path, settings, model_server):
    """``tuned(instructions_py)``: an agent ``tuned`` on the OpenAI provider (the local
    server), its instructions from ``instructions.py`` only."""
    from agents.registry import get_agent

    root = tmp_path / "agents"
    settings.PLATFORM = {
        **settings.PLATFORM,
        "AGENTS_DIR": root,
        "VAR_DIR": tmp_path / "var",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"{model_server.url}/v1",
    }

    def make(instructions_py: str):
        write_tree(
            root / "tuned",
            {
                "agent/agent.py": AGENT_PY,
                "agent/instructions.py": instructions_py,
            },
        )
        return get_agent("tuned")

    return make


def test_dynamic_instructions_read_the_host_and_agents_md_holds_what_the_model_is_told(
    tuned, alice, client_for, model_server, tmp_path
):
    agent = tuned(DYNAMIC_INSTRUCTIONS)
    KVEntry.objects.create(tenant=alice.tenant, agent=agent, key="tone", value="warm")
    response = client_for(alice).post("/tuned/v1/session", {"message": "hello"}, format="json")
    assert response.status_code == 201, response.content
    session_id, turn_id = response.json()["sessionId"], response.json()["turnId"]

    execute_turn(turn_id)

    ended = Event.objects.get(session_id=session_id, type__in=["turn.completed", "turn.failed"])
    assert ended.type == "turn.completed", ended.data
    assert ended.data["result"] == "echo: hello"
    expected = f"Answer in a warm tone. You serve session {session_id}."
    [request] = model_server.requests
    system = next(message["content"] for message in request.body["messages"] if message["role"] == "system")
    assert system.startswith(expected)
    agents_md = (tmp_path / "var" / "workspaces" / session_id / "AGENTS.md").read_text()
    assert agents_md == expected
    assert Turn.objects.get(pk=turn_id).status == "completed"


def test_instructions_that_raise_fail_the_turn_with_the_authors_error(tuned, alice, client_for):
    tuned(
        "from agents.sdk import define_instructions\n\n"
        "def render(ctx):\n    raise LookupError('no tone configured')\n\n"
        "instructions = define_instructions(render)\n"
    )
    response = client_for(alice).post("/tuned/v1/session", {"message": "hello"}, format="json")
    session_id, turn_id = response.json()["sessionId"], response.json()["turnId"]

    execute_turn(turn_id)

    ended = Event.objects.get(session_id=session_id, type__in=["turn.completed", "turn.failed"])
    assert ended.type == "turn.failed"
    assert ended.data["message"] == "rendering the instructions failed: LookupError: no tone configured"


def test_each_follow_up_sends_the_whole_conversation_whichever_worker_runs_it(tuned, alice, client_for, model_server):
    """The history a worker keeps for a session (so a follow-up reads only the turns
    completed since) is the same conversation a worker that never saw the session reads."""
    from sessions_app import turn_worker

    tuned("from agents.sdk import define_instructions\n\ninstructions = define_instructions(lambda ctx: 'Be brief.')\n")
    client = client_for(alice)
    created = client.post("/tuned/v1/session", {"message": "one"}, format="json").json()
    execute_turn(created["turnId"])
    for text in ("two", "three"):
        answer = client.post(f"/tuned/v1/session/{created['sessionId']}", {"message": text}, format="json").json()
        execute_turn(answer["turnId"])
    turn_worker._histories.clear()  # the next follow-up runs on a worker that never saw the session
    answer = client.post(f"/tuned/v1/session/{created['sessionId']}", {"message": "four"}, format="json").json()
    execute_turn(answer["turnId"])

    def conversation(request) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in request.body["messages"] if m["role"] != "system"]

    third, fourth = conversation(model_server.requests[2]), conversation(model_server.requests[3])
    said = [("user", "one"), ("assistant", "echo: one"), ("user", "two"), ("assistant", "echo: two")]
    assert third == [*said, ("user", "three")]
    assert fourth == [*said, ("user", "three"), ("assistant", "echo: three"), ("user", "four")]
