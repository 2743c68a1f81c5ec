"""The other slots of agent/: connections, channels, A/B, single-file configs, seeds,
playground renderers, lib/, evals beside agent/, and the files discovery skips."""

from __future__ import annotations

import pytest

from agents.tests.trees import codes, only

AB = """
    from agents.sdk import define_ab

    experiment = define_ab(arms=["short", "long"]{options})
"""
TOOL = '''
    from agents.sdk import tool


    @tool
    def f(text: str) -> str:
        """Echo the text."""
        return text
'''


# --- connections ------------------------------------------------------------------------------


def test_mcp_connections_are_named_by_file_and_shown_with_their_transport(build):
    surface = build(
        {
            "agent/mcp-connections/docs.py": """
                from agents.sdk import define_mcp_connection

                docs = define_mcp_connection(url="https://docs.example.com/mcp", description="Product docs")
            """
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["mcpConnections"] == [
        {
            "name": "docs",
            "transport": "http",
            "description": "Product docs",
            "target": "https://docs.example.com/mcp",
            "extension": None,
        }
    ]


def test_host_connections_are_kept_apart_from_the_models_connections(build):
    surface = build(
        {
            "agent/host-connections/billing.py": """
                from agents.sdk import define_mcp_connection

                billing = define_mcp_connection(command="billing-mcp", args=["--read-only"])
            """
        }
    )
    assert codes(surface) == []
    assert surface.mcp_connections == {}
    assert list(surface.host_connections) == ["billing"]
    assert surface.info("test")["hostConnections"][0]["transport"] == "stdio"
    assert surface.host_connections["billing"].value.args == ("--read-only",)


def test_a_connection_with_both_command_and_url_is_refused_at_import(build):
    surface = build(
        {
            "agent/mcp-connections/docs.py": """
                from agents.sdk import define_mcp_connection

                docs = define_mcp_connection(command="docs-mcp", url="https://docs.example.com/mcp")
            """
        }
    )
    assert codes(surface) == ["agents.E013"]
    assert "exactly one of command=" in only(surface, "agents.E013").message


# --- channels ---------------------------------------------------------------------------------


def test_a_channel_shows_its_routes_with_the_body_schema(build):
    surface = build(
        {
            "agent/channels/web.py": """
                from pydantic import BaseModel

                from agents.sdk import Route, define_channel


                class Message(BaseModel):
                    text: str


                async def post_message(request, body):
                    return {"ok": True}


                web = define_channel(
                    routes=[Route("post", "/messages", post_message, body=Message, description="Send a message")],
                    events={"message.completed": lambda event, channel, ctx: None},
                )
            """
        }
    )
    assert codes(surface) == []
    [channel] = surface.info("test")["channels"]
    assert channel["name"] == "web"
    assert channel["events"] == ["message.completed"]
    [route] = channel["routes"]
    assert route["method"] == "POST"
    assert route["path"] == "/messages"
    assert route["url"] == "/demo/v1/channels/web/messages"
    assert route["description"] == "Send a message"
    assert route["bodySchema"]["properties"] == {"text": {"title": "Text", "type": "string"}}
    assert route["bodySchema"]["required"] == ["text"]


def test_a_channel_route_without_a_body_has_no_schema(build):
    surface = build(
        {
            "agent/channels/ping.py": """
                from agents.sdk import Route, define_channel

                ping = define_channel(routes=[Route("GET", "/ping", lambda request: {"ok": True})])
            """
        }
    )
    assert surface.info("test")["channels"][0]["routes"][0]["bodySchema"] is None


# --- A/B --------------------------------------------------------------------------------------


def test_ab_py_is_the_experiment_named_ab(build):
    surface = build({"agent/ab.py": AB.format(options="")})
    assert codes(surface) == []
    assert list(surface.experiments) == ["ab"]


def test_ab_folder_files_are_experiments_named_by_file(build):
    surface = build({"agent/ab/tone.py": AB.format(options=", weights=[1, 3]")})
    assert codes(surface) == []
    assert surface.info("test")["experiments"] == [
        {"name": "tone", "arms": ["short", "long"], "weights": [1.0, 3.0], "description": None, "extension": None}
    ]


def test_define_ab_name_overrides_the_file_name(build):
    surface = build({"agent/ab/tone.py": AB.format(options=', name="voice"')})
    assert list(surface.experiments) == ["voice"]


def test_two_experiments_with_the_same_name_are_an_error(build):
    surface = build({"agent/ab.py": AB.format(options=""), "agent/ab/tone.py": AB.format(options=', name="ab"')})
    assert codes(surface) == ["agents.E019"]
    assert only(surface, "agents.E019").path == "agent/ab/tone.py"
    assert surface.experiments["ab"].path.name == "ab.py"


def test_ab_config_gives_the_shared_settings(build):
    surface = build(
        {
            "agent/ab.config.py": """
                from agents.sdk import define_ab_config

                config = define_ab_config(enabled=False, exclude_purposes=["eval", "live"])
            """
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["abConfig"] == {"enabled": False, "excludePurposes": ["eval", "live"]}


# --- single-file slots ------------------------------------------------------------------------


def test_artifacts_py_gives_kinds_tagging_and_retention(build):
    surface = build(
        {
            "agent/artifacts.py": """
                from agents.sdk import define_artifacts

                artifacts = define_artifacts(kinds={"report": "A weekly report"}, tag_artifact=True, retention=7)
            """
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["artifacts"] == {
        "kinds": {"report": "A weekly report"},
        "tagArtifact": True,
        "retentionSeconds": 7 * 24 * 3600,
    }


def test_result_py_makes_result_true(build):
    surface = build(
        {
            "agent/result.py": """
                from agents.sdk import define_result


                def commit(ctx):
                    return None


                result = define_result(commit=commit)
            """
        }
    )
    assert codes(surface) == []
    assert surface.result is not None
    assert surface.info("test")["result"] is True


def test_storage_py_names_the_backends(build):
    surface = build(
        {
            "agent/storage.py": """
                from agents.sdk import define_storage

                storage = define_storage()
            """
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["storage"] == {"kv": "database", "files": "database"}


def test_otel_py_turns_export_on(build):
    surface = build(
        {
            "agent/otel.py": """
                from agents.sdk import define_otel

                otel = define_otel(endpoint="https://collector.example.com", service_name="demo")
            """
        }
    )
    assert codes(surface) == []
    assert surface.otel.endpoint == "https://collector.example.com"
    assert surface.info("test")["otel"] is True


def test_an_otel_endpoint_the_outbound_policy_refuses_is_an_error(build):
    # The platform's servers would connect to it: plain http to a private name is refused like an MCP URL.
    surface = build(
        {
            "agent/otel.py": 'from agents.sdk import define_otel\n\notel = define_otel(endpoint="http://collector:4318")\n'
        }
    )
    assert codes(surface) == ["agents.E013"]
    assert "OpenTelemetry endpoint is refused" in str(surface.errors[0])


def test_a_single_file_slot_with_the_wrong_helper_is_an_error(build):
    surface = build(
        {
            "agent/storage.py": """
                from agents.sdk import define_otel

                otel = define_otel()
            """
        }
    )
    assert codes(surface) == ["agents.E004"]
    assert surface.storage is None


def test_agent_py_configures_model_turn_cap_and_root(build):
    surface = build(
        {
            "agent/agent.py": """
                from agents.sdk import define_agent, temp_fs

                agent = define_agent(model="openai:gpt-4.1", max_running_turns=3, root=temp_fs())
            """
        }
    )
    assert codes(surface) == []
    info = surface.info("test")
    assert (info["model"], info["testModel"], info["maxRunningTurns"], info["root"]) == (
        "openai:gpt-4.1",
        False,
        3,
        "TempFS",
    )


# --- seeds, playground, lib -------------------------------------------------------------------


def test_sandbox_workspace_files_are_seeds_by_relative_path(build):
    surface = build({"agent/sandbox/workspace/README.md": "hi", "agent/sandbox/workspace/data/cities.csv": "a,b"})
    assert codes(surface) == []
    assert surface.info("test")["workspace"] == {"seeds": ["README.md", "data/cities.csv"]}


def test_a_playground_renderer_is_named_after_its_tool(build):
    surface = build({"agent/tools/echo.py": TOOL, "agent/playground/tools/echo.html": "<pre>{{ output }}</pre>"})
    assert codes(surface) == []
    assert surface.info("test")["playgroundTools"] == ["echo"]


def test_a_playground_renderer_for_an_unknown_tool_is_a_warning(build):
    surface = build({"agent/playground/tools/ghost.html": "<pre></pre>"})
    assert codes(surface) == ["agents.W026"]
    assert only(surface, "agents.W026").path == "agent/playground/tools/ghost.html"


def test_lib_is_never_discovered_so_a_broken_file_there_is_silent(build):
    surface = build({"agent/lib/broken.py": "raise RuntimeError('never imported')\n"})
    assert codes(surface) == []


def test_a_tool_imports_shared_code_from_lib_with_a_relative_import(build):
    surface = build(
        {
            "agent/lib/util.py": "GREETING = 'hello from lib'\n",
            "agent/tools/greet.py": '''
                from agents.sdk import tool

                from ..lib.util import GREETING


                @tool
                def greet() -> str:
                    """Say hello."""
                    return GREETING
            ''',
        }
    )
    assert codes(surface) == []
    assert surface.tools["greet"].value() == "hello from lib"


def test_a_broken_lib_file_is_reported_once_a_tool_imports_it(build):
    surface = build(
        {
            "agent/lib/util.py": "raise ValueError('bad lib')\n",
            "agent/tools/greet.py": '''
                from agents.sdk import tool

                from ..lib.util import GREETING


                @tool
                def greet() -> str:
                    """Say hello."""
                    return GREETING
            ''',
        }
    )
    assert codes(surface) == ["agents.E001"]
    assert only(surface, "agents.E001").path == "agent/tools/greet.py"
    assert "ValueError: bad lib" in only(surface, "agents.E001").message


# --- skipped files ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["test_echo.py", "echo_test.py"])
def test_test_files_in_a_slot_are_skipped(build, name):
    surface = build({f"agent/tools/{name}": "raise RuntimeError('a test file is never imported')\n"})
    assert codes(surface) == []
    assert surface.tools == {}


def test_python_caches_and_hidden_files_are_skipped(build):
    surface = build({"agent/tools/__pycache__/echo.cpython-311.pyc": "", "agent/tools/.DS_Store": ""})
    assert codes(surface) == []


# --- evals ------------------------------------------------------------------------------------

EVAL_CASE = """
    from agents.sdk import define_eval


    async def test(t):
        await t.send("hello")


    case = define_eval(test=test, description="Echoes", tags=["smoke"])
"""
EVALS_CONFIG = """
    from agents.sdk import define_evals_config

    config = define_evals_config(max_concurrency=2)
"""


def test_an_eval_case_id_is_its_path_under_evals_without_the_suffix(build):
    surface = build({"evals/evals.config.py": EVALS_CONFIG, "evals/smoke/echo.eval.py": EVAL_CASE})
    assert codes(surface) == []
    assert list(surface.evals) == ["smoke/echo"]
    assert surface.info("test")["evals"] == {
        "cases": [{"id": "smoke/echo", "description": "Echoes", "tags": ["smoke"]}],
        "config": {"maxConcurrency": 2, "tags": [], "timeout": None, "model": None},
    }


def test_eval_cases_without_evals_config_are_an_error(build):
    surface = build({"evals/smoke/echo.eval.py": EVAL_CASE})
    assert codes(surface) == ["agents.E015"]
    assert only(surface, "agents.E015").path == "evals/evals.config.py"


def test_test_files_under_evals_are_skipped(build):
    surface = build({"evals/evals.config.py": EVALS_CONFIG, "evals/test_echo.eval.py": "raise RuntimeError\n"})
    assert codes(surface) == []
    assert surface.evals == {}


def test_an_evals_folder_inside_agent_is_ignored_with_a_warning(build):
    surface = build({"agent/evals/smoke.eval.py": EVAL_CASE})
    assert codes(surface) == ["agents.W008"]
    assert only(surface, "agents.W008").path == "agent/evals"
    assert surface.evals == {}


def test_a_retention_per_kind_and_the_tag_artifact_tool_only_when_asked(build):
    from agents.runtime.turn import tool_specs

    surface = build(
        {
            "agent/artifacts.py": """
                from datetime import timedelta

                from agents.sdk import define_artifacts

                artifacts = define_artifacts(kinds=["digest", "report"], retention={"digest": timedelta(hours=2)})
            """
        }
    )
    assert surface.info("test")["artifacts"]["retentionSeconds"] == {"digest": 7200}
    assert surface.artifacts.retention_of("report") is None  # kinds left out are kept
    assert "tag_artifact" not in {spec.name for spec in tool_specs(surface)}
    from agents.sdk import DefinitionError, define_artifacts

    with pytest.raises(DefinitionError, match=r"retention for unknown kinds \['b'\]"):
        define_artifacts(kinds=["a"], retention={"b": 1})
