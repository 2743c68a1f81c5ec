"""Each diagnostic from a real tree on disk: stable id, the path it concerns, a message that says why."""

from __future__ import annotations

import pytest

from agents.discovery import Severity
from agents.tests.trees import codes, only

TOOL = '''
    from agents.sdk import tool


    @tool
    def f(text: str) -> str:
        """Echo the text."""
        return text
'''

# One valid file per named slot, to check the name rules in each.
SLOT_FILES = {
    "tools": ("agent/tools/{name}.py", TOOL),
    "skills": ("agent/skills/{name}.md", "---\ndescription: A skill.\n---\nDo it.\n"),
    "hooks": (
        "agent/hooks/{name}.py",
        "from agents.sdk import define_hook\n\nhook = define_hook(events={'*': print})\n",
    ),
    "channels": ("agent/channels/{name}.py", "from agents.sdk import define_channel\n\nchannel = define_channel()\n"),
    "schedules": ("agent/schedules/{name}.md", "---\ncron: '0 9 * * 1'\n---\nSummarise.\n"),
    "mcp_connections": (
        "agent/mcp-connections/{name}.py",
        "from agents.sdk import define_mcp_connection\n\nc = define_mcp_connection(command='docs-mcp')\n",
    ),
    "subagents": (
        "agent/subagents/{name}/agent.py",
        "from agents.sdk import define_agent\n\nagent = define_agent(description='Helps.')\n",
    ),
}


def test_a_clean_tree_has_no_diagnostics(build):
    surface = build({"agent/tools/echo.py": TOOL})
    assert codes(surface) == []
    assert surface.errors == []


# --- E001 import failures ---------------------------------------------------------------------


def test_an_import_error_names_the_exception_and_the_line(build):
    surface = build(
        {
            "agent/tools/echo.py": """
                import os

                LIMIT = int(os.environ.get("NOPE", "x"))
            """
        }
    )
    assert codes(surface) == ["agents.E001"]
    diagnostic = only(surface, "agents.E001")
    assert diagnostic.path == "agent/tools/echo.py"
    assert diagnostic.severity is Severity.ERROR
    assert diagnostic.message.startswith("ValueError: invalid literal for int()")
    assert '(agent/tools/echo.py line 3: LIMIT = int(os.environ.get("NOPE", "x")))' in diagnostic.message


def test_an_import_error_in_a_function_names_the_last_frame_in_the_file(build):
    surface = build(
        {
            "agent/tools/echo.py": """
                def load():
                    return {}["missing"]


                TABLE = load()
            """
        }
    )
    message = only(surface, "agents.E001").message
    assert message.startswith("KeyError: 'missing'")
    assert '(agent/tools/echo.py line 2: return {}["missing"])' in message


def test_a_syntax_error_names_the_line(build):
    surface = build({"agent/tools/echo.py": "x = 1\ndef broken(:\n"})
    message = only(surface, "agents.E001").message
    assert message.startswith("SyntaxError:")
    assert "line 2" in message


def test_sys_exit_at_import_is_an_import_failure_not_an_exit(build):
    surface = build({"agent/tools/echo.py": "import sys\n\nsys.exit(3)\n"})
    assert codes(surface) == ["agents.E001"]
    assert only(surface, "agents.E001").message.startswith("SystemExit: 3")


def test_an_import_error_raised_in_lib_names_the_lib_file_and_line(build):
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
    message = only(surface, "agents.E001").message
    assert "util.py" in message
    assert "raise ValueError('bad lib')" in message


# --- E002 E003 E004 definitions ---------------------------------------------------------------


def test_a_file_with_no_definition_is_an_error(build):
    surface = build({"agent/tools/echo.py": "def echo(text):\n    return text\n"})
    assert codes(surface) == ["agents.E002"]
    assert only(surface, "agents.E002").path == "agent/tools/echo.py"


def test_a_file_with_several_definitions_is_an_error(build):
    surface = build(
        {
            "agent/tools/echo.py": '''
                from agents.sdk import tool


                @tool
                def echo(text: str) -> str:
                    """Echo the text."""
                    return text


                @tool
                def shout(text: str) -> str:
                    """Shout the text."""
                    return text.upper()
            '''
        }
    )
    assert codes(surface) == ["agents.E003"]
    assert "2 definitions" in only(surface, "agents.E003").message
    assert surface.tools == {}


def test_a_definition_made_with_another_slots_helper_is_an_error(build):
    surface = build({"agent/hooks/audit.py": TOOL})
    assert codes(surface) == ["agents.E004"]
    assert "expects a Hook" in only(surface, "agents.E004").message
    assert surface.hooks == {}


def test_a_tool_file_holding_a_hook_is_an_error(build):
    surface = build(
        {"agent/tools/echo.py": "from agents.sdk import define_hook\n\nhook = define_hook(events={'*': print})\n"}
    )
    assert codes(surface) == ["agents.E004"]


# --- E005 E006 E017 names ---------------------------------------------------------------------


@pytest.mark.parametrize("slot", list(SLOT_FILES))
def test_a_double_underscore_in_an_authored_name_is_an_error(build, slot):
    relative, text = SLOT_FILES[slot]
    surface = build({relative.format(name="crm__lookup"): text})
    assert codes(surface) == ["agents.E005"]
    assert getattr(surface, slot) == {}


@pytest.mark.parametrize("slot", list(SLOT_FILES))
def test_the_same_files_with_a_plain_name_are_fine(build, slot):
    relative, text = SLOT_FILES[slot]
    surface = build({relative.format(name="lookup"): text})
    assert codes(surface) == []
    assert list(getattr(surface, slot)) == ["lookup"]


def test_a_double_underscore_in_a_nested_hook_folder_is_an_error(build):
    relative, text = SLOT_FILES["hooks"]
    surface = build({relative.format(name="crm__audit/usage"): text})
    assert codes(surface) == ["agents.E005"]


@pytest.mark.parametrize("name", ["Read", "LS", "Grep", "Glob", "Write", "StrReplace", "Delete", "SemanticSearch"])
def test_a_tool_named_like_a_synthesized_file_tool_is_an_error(build, name):
    surface = build({f"agent/tools/{name}.py": TOOL})
    assert codes(surface) == ["agents.E006"]
    assert only(surface, "agents.E006").path == f"agent/tools/{name}.py"
    assert surface.tools == {}


@pytest.mark.parametrize("name", ["http", "schedule", "a2a"])
def test_a_channel_named_like_one_the_platform_gives_its_own_sessions_is_an_error(build, name):
    path, text = SLOT_FILES["channels"]
    surface = build({path.format(name=name): text, path.format(name="web"): text})
    assert codes(surface) == ["agents.E042"]
    assert only(surface, "agents.E042").path == f"agent/channels/{name}.py"
    assert list(surface.channels) == ["web"]


@pytest.mark.parametrize("name", ["has space", "dotted.name", "x" * 65])
def test_an_invalid_name_is_an_error(build, name):
    surface = build({f"agent/tools/{name}.py": TOOL})
    assert codes(surface) == ["agents.E017"]
    assert repr(name) in only(surface, "agents.E017").message


def test_an_invalid_subagent_folder_name_is_an_error(build):
    surface = build({"agent/subagents/bad name/agent.py": SLOT_FILES["subagents"][1]})
    assert codes(surface) == ["agents.E017"]


# --- E007 instructions, E028 no agent/ ---------------------------------------------------------


def test_a_root_agent_without_instructions_is_an_error(build):
    surface = build(
        {"agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent()\n"}, instructions=False
    )
    assert codes(surface) == ["agents.E007"]
    assert only(surface, "agents.E007").path == "agent/instructions.md"


def test_a_folder_without_an_agent_tree_is_an_error_not_a_crash(build):
    surface = build({"README.md": "Not an agent yet."}, instructions=False)
    assert codes(surface) == ["agents.E028"]


# --- E013 helpers refusing their arguments ----------------------------------------------------


def test_define_ab_with_one_arm_is_refused_at_import(build):
    surface = build({"agent/ab.py": "from agents.sdk import define_ab\n\nexperiment = define_ab(arms=['only'])\n"})
    assert codes(surface) == ["agents.E013"]
    diagnostic = only(surface, "agents.E013")
    assert diagnostic.path == "agent/ab.py"
    assert "two or more distinct arms" in diagnostic.message
    assert "['only']" in diagnostic.message


def test_a_tool_without_a_docstring_is_refused_naming_the_file_and_reason(build):
    surface = build(
        {
            "agent/tools/echo.py": """
                from agents.sdk import tool


                @tool
                def echo(text: str) -> str:
                    return text
            """
        }
    )
    assert codes(surface) == ["agents.E013"]
    message = only(surface, "agents.E013").message
    assert "echo.py:4" in message
    assert "add a docstring" in message


def test_a_tool_with_an_unannotated_parameter_is_refused_naming_the_file_and_parameter(build):
    surface = build(
        {
            "agent/tools/echo.py": '''
                from agents.sdk import tool


                @tool
                def echo(text) -> str:
                    """Echo the text."""
                    return text
            '''
        }
    )
    assert codes(surface) == ["agents.E013"]
    message = only(surface, "agents.E013").message
    assert "echo.py" in message
    assert "parameter 'text' has no type annotation" in message


def test_a_tool_with_var_args_is_refused(build):
    surface = build(
        {
            "agent/tools/echo.py": '''
                from agents.sdk import tool


                @tool
                def echo(*texts: str) -> str:
                    """Echo the texts."""
                    return " ".join(texts)
            '''
        }
    )
    assert codes(surface) == ["agents.E013"]
    assert "*texts" in only(surface, "agents.E013").message


def test_an_agent_model_without_a_provider_is_refused(build):
    surface = build({"agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent(model='gpt-4')\n"})
    assert codes(surface) == ["agents.E013"]
    assert "'gpt-4'" in only(surface, "agents.E013").message


# --- W012 stray, W016 unknown top-level -------------------------------------------------------


@pytest.mark.parametrize(
    "relative",
    ["agent/tools/notes.txt", "agent/tools/helpers/echo.py", "agent/channels/README.md", "agent/schedules/x.yaml"],
)
def test_a_stray_file_in_a_slot_folder_is_a_warning(build, relative):
    surface = build({relative: "x = 1\n"})
    assert codes(surface) == ["agents.W012"]
    assert only(surface, "agents.W012").severity is Severity.WARNING


@pytest.mark.parametrize("relative", ["agent/notes.txt", "agent/helpers.py", "agent/sandbox.py"])
def test_an_unknown_top_level_file_is_a_warning(build, relative):
    surface = build({relative: "x = 1\n"})
    assert codes(surface) == ["agents.W016"]
    assert only(surface, "agents.W016").path == relative


def test_diagnostics_carry_the_hint_of_their_code(build):
    surface = build({"agent/tools/Read.py": TOOL})
    assert only(surface, "agents.E006").as_dict()["hint"].startswith("Rename the tool")
