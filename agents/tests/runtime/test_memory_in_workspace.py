"""A new workspace shows the agent's memory read-only at ``memory/`` (``/memory`` under a
root), later turns keep that copy, and the prompt names it; turns on the ``test`` model."""

from __future__ import annotations

import stat

from agents.discovery import discover
from agents.events import EventType
from agents.runtime.turn import RuntimeSettings
from agents.runtime.workspace import prepare_workspace
from agents.tests.runtime.conftest import BASE, Harness

NOTES = {
    "memory/journal.md": b"## 2026-12-01 09:00:00 UTC \xc2\xb7 ses_a\n\n> the door is blue\n",
    "memory/x/y.md": b"y",
}
ROOTED = {"agent/agent.py": "from agents.sdk import define_agent, temp_fs\n\nagent = define_agent(root=temp_fs())\n"}


def test_memory_is_copied_read_only_kept_by_later_turns_and_named_in_the_prompt(tmp_path):
    agent = Harness(tmp_path / "agent", RuntimeSettings()).write(BASE)
    workspace = tmp_path / "ws"
    prompt = agent.run("/system", workspace=workspace, memory=NOTES).text
    assert "memory/ holds notes from earlier sessions (read-only): memory/journal.md, memory/x/y.md." in prompt
    journal = workspace / "memory/journal.md"
    assert journal.read_bytes() == NOTES["memory/journal.md"]
    assert stat.S_IMODE(journal.stat().st_mode) == 0o444

    assert "memory/journal.md" in agent.run("/system", workspace=workspace).text  # memory=None: the copy stays
    files = prepare_workspace(workspace, agent.surface(), "x", memory={"memory/new.md": b"n", "memory/../up": b"u"})
    assert [f for f in files if f.startswith("memory/")] == ["memory/new.md"]  # replaced; a climbing name left out
    assert not (workspace / "up").exists()
    prepare_workspace(workspace, agent.surface(), "x", memory={})
    assert not (workspace / "memory").exists()
    assert "earlier sessions" not in agent.run("/system", workspace=workspace).text


def test_under_a_root_memory_is_a_read_only_mount_and_a_symlinked_memory_is_not(tmp_path):
    agent = Harness(tmp_path / "agent", RuntimeSettings()).write({**BASE, **ROOTED})
    workspace = tmp_path / "ws"
    prompt = agent.run("/system", workspace=workspace, memory=NOTES).text
    assert "/memory holds notes from earlier sessions (read-only): /memory/journal.md, /memory/x/y.md." in prompt
    calls = [
        '/call Read {"path": "/memory/journal.md"}',
        '/call Write {"path": "/memory/journal.md", "content": "forged"}',
        '/call Delete {"path": "/memory/x/y.md"}',
        '/call Write {"path": "/notes.md", "content": "mine"}',
    ]
    agent.run("\n".join(calls), workspace=workspace)
    read, write, delete, own = agent.data(EventType.ACTION_RESULT)
    assert "the door is blue" in read["output"] and not own["isError"]
    assert write["output"] == {"error": "read-only mount: /memory/journal.md"}
    assert delete["output"] == {"error": "read-only mount: /memory/x/y.md"}
    assert (workspace / "memory/journal.md").read_bytes() == NOTES["memory/journal.md"]

    # Code run in a workspace could swap memory/ for a link out of it: nothing is mounted then.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file")
    moved = tmp_path / "moved"
    (workspace / "memory").rename(moved)
    (workspace / "memory").symlink_to(outside)
    agent.sink.events.clear()
    agent.run('/call Read {"path": "/memory/secret.txt"}', workspace=workspace)
    [refused] = agent.data(EventType.ACTION_RESULT)
    assert refused["isError"] and "host file" not in str(refused["output"])


def test_a_seed_under_memory_is_not_copied_and_says_so(tmp_path):
    agent = Harness(tmp_path / "agent", RuntimeSettings()).write(
        {**BASE, "agent/sandbox/workspace/Memory/journal.md": "seeded", "agent/sandbox/workspace/notes.md": "n"}
    )
    surface, _ = discover(agent.folder, "agent")
    assert list(surface.seeds) == ["notes.md"]
    [warning] = [d for d in surface.diagnostics if d.path.endswith("Memory/journal.md")]
    assert warning.code.id == "agents.W016" and "memory/" in warning.message
