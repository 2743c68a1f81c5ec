"""AgentSurface.info(): the JSON document of GET /v1/info and `agent info --json`."""

from __future__ import annotations

import json

from agents.tests.trees import codes

INFO_KEYS = {
    "agent",
    "model",
    "testModel",
    "description",
    "maxRunningTurns",
    "instructions",
    "tools",
    "skills",
    "mcpConnections",
    "hostConnections",
    "subagents",
    "channels",
    "schedules",
    "hooks",
    "experiments",
    "abConfig",
    "artifacts",
    "result",
    "storage",
    "otel",
    "root",
    "extensions",
    "workspace",
    "playgroundTools",
    "evals",
    "diagnostics",
}
TOOL_KEYS = {
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "execution",
    "effect",
    "needsApproval",
    "timeout",
    "extension",
}

# A tree touching every slot, so the whole document is exercised at once.
FULL_TREE = {
    "agent/agent.py": """
        from agents.sdk import define_agent, temp_fs

        agent = define_agent(model="anthropic:claude-sonnet-4", description="Plans trips.", root=temp_fs())
    """,
    "agent/tools/book.py": '''
        from typing import Literal

        from agents.sdk import ToolContext, tool


        @tool(effect="write", needs_approval=lambda args: args["cabin"] == "first", timeout=20)
        async def book(ctx: ToolContext, city: str, cabin: Literal["economy", "first"] = "economy") -> dict:
            """Book a flight."""
            return {}
    ''',
    "agent/skills/plan.md": "---\ndescription: Plan a trip.\n---\nAsk where and when.\n",
    "agent/mcp-connections/maps.py": """
        from agents.sdk import define_mcp_connection

        maps = define_mcp_connection(url="https://maps.example.com/mcp")
    """,
    "agent/channels/web.py": """
        from pydantic import BaseModel

        from agents.sdk import Route, define_channel


        class Body(BaseModel):
            text: str


        web = define_channel(routes=[Route("POST", "/in", lambda request, body: {}, body=Body)])
    """,
    "agent/hooks/audit/usage.py": """
        from agents.sdk import define_hook

        hook = define_hook(events={"turn.completed": lambda event, ctx: None})
    """,
    "agent/schedules/daily.md": "---\ncron: '0 8 * * *'\n---\nCheck fares.\n",
    "agent/ab.py": "from agents.sdk import define_ab\n\nexperiment = define_ab(arms=['a', 'b'])\n",
    "agent/artifacts.py": "from datetime import timedelta\n\nfrom agents.sdk import define_artifacts\n\n"
    "a = define_artifacts(kinds=['itinerary'], retention=timedelta(hours=1))\n",
    "agent/result.py": "from agents.sdk import define_result\n\nresult = define_result(commit=lambda ctx: None)\n",
    "agent/subagents/scout/agent.py": "from agents.sdk import define_agent\n\n"
    "agent = define_agent(description='Scouts.')\n",
    "agent/sandbox/workspace/notes.md": "notes",
    "agent/playground/tools/ghost.html": "<pre></pre>",
    "evals/evals.config.py": "from agents.sdk import define_evals_config\n\nconfig = define_evals_config()\n",
    "evals/smoke.eval.py": "from agents.sdk import define_eval\n\ncase = define_eval(test=lambda t: None)\n",
}


def test_info_has_exactly_the_documented_keys(build):
    assert set(build({}).info("test")) == INFO_KEYS


def test_info_of_a_minimal_agent_is_empty_but_complete(build):
    info = build({}).info("test")
    assert (info["agent"], info["model"], info["testModel"]) == ("demo", "test", True)
    assert info["tools"] == info["skills"] == info["subagents"] == info["hooks"] == []
    assert (info["result"], info["otel"], info["artifacts"], info["storage"], info["root"]) == (
        False,
        False,
        None,
        None,
        None,
    )
    assert info["evals"] == {"cases": [], "config": None}
    assert info["diagnostics"] == []


def test_the_default_model_applies_when_the_agent_names_none(build):
    info = build({}).info("openai:gpt-4.1-mini")
    assert (info["model"], info["testModel"]) == ("openai:gpt-4.1-mini", False)


def test_a_full_tree_serialises_to_json(build):
    surface = build(FULL_TREE)
    assert codes(surface) == ["agents.W026"]
    document = json.loads(json.dumps(surface.info("test")))
    assert set(document) == INFO_KEYS
    assert document["model"] == "anthropic:claude-sonnet-4"
    assert document["description"] == "Plans trips."
    assert document["root"] == "TempFS"
    assert document["result"] is True
    assert document["artifacts"]["retentionSeconds"] == 3600
    assert [hook["name"] for hook in document["hooks"]] == ["audit/usage"]
    assert [case["id"] for case in document["evals"]["cases"]] == ["smoke"]
    assert document["subagents"][0]["model"] == "anthropic:claude-sonnet-4"


def test_a_tool_entry_has_schemas_execution_approval_and_effect(build):
    [tool] = build(FULL_TREE).info("test")["tools"]
    assert set(tool) == TOOL_KEYS
    assert tool["name"] == "book"
    assert tool["inputSchema"]["required"] == ["city"]
    assert tool["inputSchema"]["properties"]["cabin"]["enum"] == ["economy", "first"]
    assert tool["outputSchema"] == {"type": "object", "additionalProperties": True}
    assert (tool["execution"], tool["effect"], tool["needsApproval"], tool["timeout"]) == (
        "server",
        "write",
        "conditional",
        20,
    )


def test_result_is_false_without_result_py(build):
    assert build({}).info("test")["result"] is False


def test_diagnostics_are_dicts_with_severity_code_path_message_and_hint(build):
    diagnostics = build(FULL_TREE).info("test")["diagnostics"]
    assert diagnostics == [
        {
            "severity": "warning",
            "code": "agents.W026",
            "path": "agent/playground/tools/ghost.html",
            "message": "there is no tool 'ghost' to render",
            "hint": "Name the HTML file after a tool of this agent.",
        }
    ]


def test_an_error_diagnostic_has_severity_error(build):
    [diagnostic] = build({"agent/tools/Read.py": FULL_TREE["agent/tools/book.py"]}).info("test")["diagnostics"]
    assert (diagnostic["severity"], diagnostic["code"]) == ("error", "agents.E006")


def test_subagent_diagnostics_are_in_the_document(build):
    diagnostics = build({"agent/subagents/scout/instructions.md": "Scout."}).info("test")["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["agents.E009"]
