"""MCP client connections in a turn (DESIGN §9.7): a real stdio server (the ``mcp``
package's ``MCPServer``, ``mcp_servers/toolbox.py``) started by the process's pool,
the ``test`` model calling ``<connection>__<tool>``, host code calling host-only
connections through ``ctx.host.mcp``; a server that crashes is started afresh for the
next call and one that hangs is stopped at its timeout, both as ``isError`` results."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.discovery import discover
from agents.events import EventType
from agents.runtime.emitter import MemorySink
from agents.runtime.mcp.connections import McpConnections
from agents.runtime.turn import TurnOutcome, TurnRequest, run_turn
from agents.sdk import SessionInfo
from agents.tests.trees import INSTRUCTIONS, write_tree

TOOLBOX = str(Path(__file__).parent / "mcp_servers" / "toolbox.py")

CONNECTION = """
    import sys

    from agents.sdk import define_mcp_connection

    connection = define_mcp_connection(command=sys.executable, args=[{toolbox!r}]{options})
"""

PEEK = '''
    from agents.sdk import ToolContext, tool


    @tool
    async def peek(ctx: ToolContext) -> dict:
        """What the vault server says about itself, and the names of its tools."""
        names = [t["name"] for t in await ctx.host.mcp.list_tools("vault")]
        return {"whoami": await ctx.host.mcp.call("vault", "whoami", {}), "tools": names}
'''


@dataclass
class _Host:
    """``ctx.host`` as the platform gives it, reduced to what these tools use."""

    mcp: McpConnections


def _tree(folder: Path) -> Path:
    files = {
        **INSTRUCTIONS,
        "agent/mcp-connections/box.py": CONNECTION.format(
            toolbox=TOOLBOX,
            options=', tools=["echo", "shout", "fail", "crash", "hang", "nap"], needs_approval=["shout"], timeout=2',
        ),
        "agent/host-connections/vault.py": CONNECTION.format(
            toolbox=TOOLBOX, options=', env={"TOOLBOX_TOKEN": "${VAULT_TOKEN}"}'
        ),
        "agent/tools/peek.py": PEEK,
    }
    return write_tree(folder, files)


def _run(folder: Path, message: str, *, cancel_when_called: bool = False) -> tuple[TurnOutcome, MemorySink]:
    surface, _ = discover(folder, "box")
    assert surface.errors == [], [str(d) for d in surface.errors]
    mcp = McpConnections(surface, secret={"VAULT_TOKEN": "s3cret"}.get)
    sink = MemorySink()
    request = TurnRequest(
        session=SessionInfo(id="ses_mcp", agent="box"), turn_id="turn_mcp", message=message, host=_Host(mcp), mcp=mcp
    )

    async def turn() -> TurnOutcome:
        running = asyncio.ensure_future(run_turn(surface, request, sink))
        while cancel_when_called and not sink.of_type(EventType.ACTIONS_REQUESTED):
            await asyncio.sleep(0.01)
        if cancel_when_called:
            await asyncio.sleep(0.2)  # the call is on its way to the server
            running.cancel()  # as a stop or a preempting follow-up does
        return await running

    return asyncio.run(turn()), sink


def _results(sink: MemorySink) -> dict[str, dict[str, Any]]:
    return {event.data["toolName"]: event.data for event in sink.of_type(EventType.ACTION_RESULT)}


def test_the_model_calls_a_stdio_tool_and_host_code_calls_a_host_only_one(tmp_path):
    folder = _tree(tmp_path / "box")
    message = "\n".join(
        [
            '/call box__echo {"text": "hi"}',
            '/call box__fail {"reason": "no"}',
            "/call peek {}",
            "/call vault__whoami {}",
            "/call box__whoami {}",
        ]
    )
    outcome, sink = _run(folder, message)
    assert outcome.status == "completed", outcome.failure
    results = _results(sink)
    assert results["box__echo"]["output"] == {"echo": "hi"} and not results["box__echo"]["isError"]
    assert results["box__fail"]["isError"] and "failing on purpose: no" in json.dumps(results["box__fail"]["output"])
    peek = results["peek"]["output"]
    # The host-only server ran in the agent folder, with its secret filled in.
    assert peek["whoami"]["token"] == "s3cret" and peek["whoami"]["cwd"] == str(folder.resolve())
    assert "whoami" in peek["tools"]
    # The model is offered box's allowed tools, never the host-only connection's.
    for hidden in ("vault__whoami", "box__whoami"):
        assert results[hidden]["isError"]
        available = results[hidden]["output"]["error"].split("available:")[1]
        assert "box__echo" in available and "vault__" not in available and "box__whoami" not in available

    outcome, sink = _run(folder, '/call box__shout {"text": "hi"}')
    assert outcome.status == "parked"  # needs_approval=["shout"]
    assert [e.data["toolName"] for e in sink.of_type(EventType.ACTION_APPROVAL_REQUESTED)] == ["box__shout"]


def test_crashed_servers_restart_hanging_ones_stop_at_their_timeout_and_stopped_turns_cancel_calls(
    tmp_path,
):
    folder = _tree(tmp_path / "box")
    message = (
        '/call box__crash {}\n/call box__echo {"text": "again"}\n/call box__hang {}\n/call box__echo {"text": "on"}'
    )
    outcome, sink = _run(folder, message)
    assert outcome.status == "completed", outcome.failure
    calls = [(e.data["toolName"], e.data["isError"], e.data["output"]) for e in sink.of_type(EventType.ACTION_RESULT)]
    assert [(name, failed) for name, failed, _ in calls] == [
        ("box__crash", True),
        ("box__echo", False),
        ("box__hang", True),
        ("box__echo", False),
    ]
    assert "went away" in calls[0][2]["error"]
    assert "no answer within 2 s" in calls[2][2]["error"]
    assert calls[1][2] == {"echo": "again"} and calls[3][2] == {"echo": "on"}

    # A turn stopped during a call ends interrupted at once; the server took the
    # cancellation and answers the next call.
    outcome, _ = _run(folder, '/call box__nap {"seconds": 30}', cancel_when_called=True)
    assert (outcome.status, outcome.failure) == ("failed", "turn interrupted")
    outcome, sink = _run(folder, '/call box__echo {"text": "awake"}')
    assert [e.data["output"] for e in sink.of_type(EventType.ACTION_RESULT)] == [{"echo": "awake"}]


def test_a_server_slower_to_start_than_its_call_timeout_still_answers_its_first_call(tmp_path):
    # Starting gets at least 10 s, whatever the call timeout says (1 s here).
    options = ', tools=["echo"], timeout=1, env={"TOOLBOX_START_DELAY": "2"}'
    folder = write_tree(
        tmp_path / "box",
        {**INSTRUCTIONS, "agent/mcp-connections/box.py": CONNECTION.format(toolbox=TOOLBOX, options=options)},
    )
    outcome, sink = _run(folder, '/call box__echo {"text": "late"}')
    assert outcome.status == "completed", outcome.failure
    assert [e.data["output"] for e in sink.of_type(EventType.ACTION_RESULT)] == [{"echo": "late"}]
