"""subagents/<id>/: a child agent tree whose agent.py must give a description."""

from __future__ import annotations

from agents.tests.trees import codes, only

RESEARCHER = """
    from agents.sdk import define_agent

    agent = define_agent(description="Finds sources for a claim.")
"""
SEARCH_TOOL = '''
    from agents.sdk import tool


    @tool
    def search(query: str) -> list[str]:
        """Search the web."""
        return []
'''


def test_a_subagent_is_named_by_its_folder_with_its_description(build):
    surface = build(
        {
            "agent/subagents/researcher/agent.py": RESEARCHER,
            "agent/subagents/researcher/instructions.md": "Find sources.",
        }
    )
    assert codes(surface) == []
    assert surface.info("test")["subagents"] == [
        {"id": "researcher", "description": "Finds sources for a claim.", "model": "test", "tools": [], "skills": []}
    ]


def test_a_subagents_own_tools_stay_on_the_subagent(build):
    surface = build(
        {
            "agent/subagents/researcher/agent.py": RESEARCHER,
            "agent/subagents/researcher/tools/search.py": SEARCH_TOOL,
        }
    )
    assert codes(surface) == []
    assert surface.tools == {}
    assert list(surface.subagents["researcher"].tools) == ["search"]
    assert surface.info("test")["subagents"][0]["tools"] == ["search"]


def test_a_subagent_without_a_description_is_an_error(build):
    surface = build({"agent/subagents/researcher/instructions.md": "Find sources."})
    assert codes(surface) == ["agents.E009"]
    assert only(surface, "agents.E009").path == "agent/subagents/researcher/agent.py"


def test_a_result_py_in_a_subagent_is_ignored_with_a_warning(build):
    surface = build(
        {
            "agent/subagents/researcher/agent.py": RESEARCHER,
            "agent/subagents/researcher/result.py": """
                from agents.sdk import define_result

                result = define_result(commit=lambda ctx: None)
            """,
        }
    )
    assert codes(surface) == ["agents.W016"]
    assert only(surface, "agents.W016").path == "agent/subagents/researcher/result.py"
    assert surface.subagents["researcher"].result is None


def test_a_subagent_needs_no_instructions_of_its_own(build):
    surface = build({"agent/subagents/researcher/agent.py": RESEARCHER})
    assert codes(surface) == []


def test_a_subagent_named_like_a_tool_is_an_error(build):
    surface = build({"agent/tools/search.py": SEARCH_TOOL, "agent/subagents/search/agent.py": RESEARCHER})
    assert codes(surface) == ["agents.E019"]


def test_a_subagents_diagnostics_are_part_of_the_agents(build):
    surface = build(
        {
            "agent/subagents/researcher/agent.py": RESEARCHER,
            "agent/subagents/researcher/tools/Read.py": SEARCH_TOOL,
        }
    )
    assert codes(surface) == ["agents.E006"]
    assert only(surface, "agents.E006").path == "agent/subagents/researcher/tools/Read.py"


def test_a_file_beside_the_subagent_folders_is_a_stray(build):
    surface = build({"agent/subagents/researcher.md": "Find sources."})
    assert codes(surface) == ["agents.W012"]
