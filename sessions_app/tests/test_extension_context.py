"""A mounted extension's code reads its mount as ``ctx.extension``: the namespace and the
validated config (defaults filled in), in every kind of contribution: tools (in a turn,
in a subagent the extension brought, and called directly), dynamic instructions, hooks,
channel routes and schedule handlers; the agent's own code gets ``None``.

Turns run in process through ``execute_turn`` (the Celery task's body) on the OpenAI
SDK pointed at a local server speaking its wire format, so the system prompt the model
is told can be read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from agents.tests.runtime.model_server import ScriptedModelServer
from agents.tests.trees import write_tree
from sessions_app.dispatch import dispatch_pending
from sessions_app.models import Event
from sessions_app.turn_worker import execute_turn

pytestmark = pytest.mark.django_db(transaction=True)

# Each contribution reports what it was given; {seen!r} is a JSON-lines file.
EXTENSION = {
    "agent/agent.py": 'from agents.sdk import define_agent\n\nagent = define_agent(model="openai:gpt-test")\n',
    "agent/instructions.md": "You help people.",
    "agent/extensions/crm.py": """
        from agents.sdk import mount

        crm = mount("../../vendor/crm", config={"region": "eu"})
    """,
    "agent/tools/own.py": """
        from agents.sdk import tool


        @tool
        def own(ctx) -> dict:
            \"\"\"The agent's own tool.\"\"\"
            return {"extension": ctx.extension}
    """,
    "vendor/crm/extension.py": """
        from pydantic import BaseModel

        from agents.sdk import define_extension


        class Config(BaseModel):
            region: str
            limit: int = 10


        extension = define_extension(name="crm", config=Config)
    """,
    "vendor/crm/tools/whoami.py": """
        from agents.sdk import tool


        @tool
        def whoami(ctx) -> dict:
            \"\"\"Which mount am I, and with what config.\"\"\"
            ctx.extension.config["limit"] += 1  # a copy: the next call sees 10 again
            return {"namespace": ctx.extension.namespace, "config": ctx.extension.config}
    """,
    "vendor/crm/subagents/helper/agent.py": (
        "from agents.sdk import define_agent\n\nagent = define_agent(description='Helps.')\n"
    ),
    "vendor/crm/subagents/helper/instructions.md": "You help the CRM.",
    "vendor/crm/subagents/helper/tools/region.py": """
        from agents.sdk import tool


        @tool
        def region(ctx) -> str:
            \"\"\"The mount's region.\"\"\"
            return f"{ctx.extension.namespace}:{ctx.extension.config['region']}"
    """,
    "vendor/crm/instructions.py": """
        from agents.sdk import define_instructions

        instructions = define_instructions(
            lambda ctx: f"CRM {ctx.extension.namespace} serves region {ctx.extension.config['region']}."
        )
    """,
    "vendor/crm/hooks/audit.py": """
        import json

        from agents.sdk import define_hook


        def record(event, ctx):
            if event["type"] == "turn.completed":
                with open({seen!r}, "a") as out:
                    out.write(json.dumps(["hook", ctx.extension.namespace, ctx.extension.config]) + "\\n")


        hook = define_hook(events={"turn.completed": record})
    """,
    "vendor/crm/channels/inbox.py": """
        from agents.sdk import Route, define_channel


        def config(ctx):
            return {"namespace": ctx.extension.namespace, "config": ctx.extension.config}


        channel = define_channel(routes=[Route("GET", "/config", handler=config)])
    """,
    "vendor/crm/schedules/sync.py": """
        import json

        from agents.sdk import define_schedule


        def sync(args):
            with open({seen!r}, "a") as out:
                out.write(json.dumps(["schedule", args.extension.namespace, args.extension.config]) + "\\n")


        schedule = define_schedule(cron="0 3 * * *", handler=sync)
    """,
}
CONFIG = {"region": "eu", "limit": 10}


@pytest.fixture
def model_server():
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def mounted(tmp_path: Path, settings, model_server) -> Path:
    """An agent ``mounted`` whose extension ``crm`` is mounted with ``{"region": "eu"}``;
    returns the file its hook and schedule write to."""
    root, seen = tmp_path / "agents", tmp_path / "seen.jsonl"
    settings.PLATFORM = {
        **settings.PLATFORM,
        "AGENTS_DIR": root,
        "VAR_DIR": tmp_path / "var",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"{model_server.url}/v1",
    }
    write_tree(root / "mounted", {path: text.replace("{seen!r}", repr(str(seen))) for path, text in EXTENSION.items()})
    return seen


def test_every_contribution_of_a_mount_reads_its_namespace_and_validated_config(
    mounted, alice, client_for, model_server
):
    client = client_for(alice)
    message = "/call crm__whoami {}\n/call crm__whoami {}\n/call own {}\n/subagent crm__helper /call region {}"
    created = client.post("/mounted/v1/session", {"message": message}, format="json")
    assert created.status_code == 201, created.content
    session_id = created.json()["sessionId"]

    execute_turn(created.json()["turnId"])

    results = [e.data for e in Event.objects.filter(session_id=session_id, type="action.result").order_by("index")]
    outputs = {r["toolName"]: [] for r in results}
    for r in results:
        assert not r["isError"], r
        outputs[r["toolName"]].append(r["output"])
    # Each call gets its own copy of the config (the tool's += 1 does not carry over).
    assert outputs["crm__whoami"] == [{"namespace": "crm", "config": {"region": "eu", "limit": 11}}] * 2
    assert outputs["own"] == [{"extension": None}]
    assert outputs["region"] == ["crm:eu"]  # a tool of the extension's subagent
    system = next(m["content"] for m in model_server.requests[0].body["messages"] if m["role"] == "system")
    assert "CRM crm serves region eu." in system

    dispatch_pending(session_id)
    call_command("agent", "dispatch", "mounted", "--schedule", "crm__sync")
    assert [json.loads(line) for line in mounted.read_text().splitlines()] == [
        ["hook", "crm", CONFIG],
        ["schedule", "crm", CONFIG],
    ]

    route = client.get("/mounted/v1/channels/crm__inbox/config")
    assert route.status_code == 200, route.content
    assert route.json() == {"namespace": "crm", "config": CONFIG}
    direct = client.post("/mounted/v1/tools/crm__whoami", {"input": {}}, format="json")
    assert direct.json()["result"] == {"namespace": "crm", "config": {"region": "eu", "limit": 11}}
