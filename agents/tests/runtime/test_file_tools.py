"""An agent with a ``root`` gets the synthesized file tools over it."""

from __future__ import annotations

from agents.discovery import discover
from agents.events import EventType
from agents.runtime.fs.host import MemoryFileStore
from agents.tests.trees import write_tree

TEMP_ROOT = """
from agents.sdk import define_agent, temp_fs

agent = define_agent(root=temp_fs({"/notes/todo.md": "buy milk\\ncall mum\\n"}){extra})
"""


def root(agent, extra: str = "") -> None:
    agent.write({"agent/agent.py": TEMP_ROOT.replace("{extra}", extra)})


def outputs(agent) -> list:
    return [(r["output"], r["isError"]) for r in agent.data(EventType.ACTION_RESULT)]


def test_the_file_tools_read_and_write_the_root(agent, tmp_path):
    root(agent)
    workspace = tmp_path / "workspace"
    message = '/call Read {"path": "/notes/todo.md"}\n/call Write {"path": "/notes/new.md", "content": "hi"}'
    agent.run(message, workspace=workspace)
    (read, read_error), (_, write_error) = outputs(agent)
    assert not read_error and "buy milk" in read and "call mum" in read
    assert not write_error
    # A temp_fs lasts as long as the session (its workspace), so the next turn sees the write.
    agent.run('/call Glob {"pattern": "/notes/*.md"}', workspace=workspace)
    assert outputs(agent)[-1] == (["/notes/new.md", "/notes/todo.md"], False)


def test_file_tool_errors_are_the_contract_texts(agent):
    root(agent)
    agent.run('/call Read {"path": "/nope.md"}\n/call Grep {"pattern": "("}')
    assert [output for output, _ in outputs(agent)] == [
        {"error": "not found: /nope.md"},
        {"error": "invalid grep pattern: ("},
    ]


def test_tmp_is_scratch_for_one_turn(agent):
    root(agent)
    agent.run('/call Write {"path": "/tmp/x.txt", "content": "scratch"}\n/call Read {"path": "/tmp/x.txt"}')
    assert "scratch" in outputs(agent)[1][0]
    agent.run('/call Read {"path": "/tmp/x.txt"}')
    assert outputs(agent)[-1] == ({"error": "not found: /tmp/x.txt"}, True)


def test_an_allow_list_offers_only_the_named_file_tools(agent):
    root(agent, ', tools=["Read", "LS"]')
    agent.run('/call Write {"path": "/a", "content": "x"}')
    [(output, is_error)] = outputs(agent)
    assert is_error and output["error"].startswith("unknown tool 'Write'; available: Read, LS")


def test_a_read_only_root_gets_no_write_tools(agent):
    agent.write(
        {
            "agent/agent.py": """
                from agents.sdk import define_agent, overlay_fs, temp_fs

                agent = define_agent(root=overlay_fs(temp_fs({"/a.md": "top"}), temp_fs({"/a.md": "bottom"})))
            """
        }
    )
    agent.run('/call Read {"path": "/a.md"}\n/call Write {"path": "/a.md", "content": "x"}')
    (read, _), (write, write_error) = outputs(agent)
    assert "top" in read
    assert write_error and "unknown tool 'Write'" in write["error"]


def test_a_host_fs_root_uses_the_sessions_store(agent):
    agent.write(
        {
            "agent/agent.py": """
                from agents.sdk import define_agent, host_fs

                agent = define_agent(root=host_fs())
            """
        }
    )
    store = MemoryFileStore()
    agent.run('/call Write {"path": "/kept.md", "content": "stored"}', file_store_for=lambda scope: store)
    import asyncio

    assert asyncio.run(store.read("/kept.md"))[0] == b"stored"


def test_impossible_file_tool_settings_refuse_to_start(tmp_path):
    cases = {
        "unknown": ('root=temp_fs(), tools=["Read", "Teleport"]', "agents.E029"),
        "no-root": ('tools=["Read"]', "agents.E030"),
        "read-only": ('root=overlay_fs(temp_fs()), tools=["Read", "Write"]', "agents.E031"),
    }
    for name, (arguments, code) in cases.items():
        folder = write_tree(
            tmp_path / name,
            {
                "agent/instructions.md": "x",
                "agent/agent.py": f"from agents.sdk import define_agent, overlay_fs, temp_fs\n\n"
                f"agent = define_agent({arguments})\n",
            },
        )
        surface, _ = discover(folder)
        assert [d.code.id for d in surface.errors] == [code], name
