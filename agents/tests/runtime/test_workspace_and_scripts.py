from __future__ import annotations

import pytest

from agents.events import EventType
from agents.runtime.workspace import WorkspacePathError, normalize_workspace_path, prepare_workspace

SCRIPT_TOOL = '''
import os

from agents.sdk import tool


@tool(execution="agent", timeout=20)
def list_workspace(suffix: str) -> list:
    """List the workspace files with a suffix."""
    return sorted(name for name in os.listdir(".") if name.endswith(suffix))
'''


def test_the_workspace_holds_instructions_skills_seeds_and_sent_files(agent, tmp_path):
    agent.write(
        {
            "agent/skills/triage.md": "---\ndescription: Triage steps\n---\nRead, then sort.",
            "agent/sandbox/workspace/data/cities.csv": "name\nLyon\n",
        }
    )
    directory = tmp_path / "ws"
    files = prepare_workspace(directory, agent.surface(), "Be brief.", {"notes/todo.md": "- call back"})
    assert files == [".skills/triage/SKILL.md", "AGENTS.md", "data/cities.csv", "notes/todo.md"]
    assert (directory / "AGENTS.md").read_text() == "Be brief."
    assert "Read, then sort." in (directory / ".skills/triage/SKILL.md").read_text()
    assert (directory / "data/cities.csv").read_text() == "name\nLyon\n"


@pytest.mark.parametrize("path", ["memory/x", "./memory/x", "a/../memory/x", "memory"])
def test_memory_is_reserved_after_normalisation(path):
    with pytest.raises(WorkspacePathError, match="reserved memory/"):
        normalize_workspace_path(path)


@pytest.mark.parametrize("path", ["../escape", "/etc/passwd", "a/../../b", "", "bad\x00name"])
def test_paths_that_leave_the_workspace_are_refused(path):
    with pytest.raises(WorkspacePathError):
        normalize_workspace_path(path)


def test_a_refused_sent_file_writes_nothing(agent, tmp_path):
    directory = tmp_path / "ws"
    with pytest.raises(WorkspacePathError):
        prepare_workspace(directory, agent.surface(), "Be brief.", {"ok.txt": "1", "memory/x": "2"})
    assert not directory.exists()


def test_an_agent_execution_tool_runs_as_a_script_in_the_workspace(agent, tmp_path):
    agent.write({"agent/tools/list_workspace.py": SCRIPT_TOOL})
    directory = tmp_path / "ws"
    prepare_workspace(directory, agent.surface(), "x", {"a.txt": "1", "b.txt": "2", "c.md": "3"})
    outcome = agent.run('/call list_workspace {"suffix": ".txt"}', workspace=directory)
    [result] = agent.data(EventType.ACTION_RESULT)
    assert result["output"] == ["a.txt", "b.txt"], result
    assert outcome.status == "completed"


def test_an_agent_execution_tool_without_a_workspace_is_an_error_result(agent):
    agent.write({"agent/tools/list_workspace.py": SCRIPT_TOOL})
    agent.run('/call list_workspace {"suffix": ".txt"}')
    [result] = agent.data(EventType.ACTION_RESULT)
    assert result["isError"] and "runs in the session workspace" in result["output"]["error"]
