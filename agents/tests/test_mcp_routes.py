"""``GET /v1/tools`` and ``/v1/info`` with MCP connections (DESIGN §9.7): an advertised
stdio server's tools are listed as ``<connection>__<tool>`` with their schemas, a
host-only server's never are, and a connection that cannot list its tools (a missing
command, an unreachable URL) is a ``connectionErrors`` entry while the agent still serves."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from agents.tests.trees import INSTRUCTIONS, write_tree

pytestmark = pytest.mark.django_db

TOOLBOX = Path(__file__).parent / "runtime" / "mcp_servers" / "toolbox.py"
HEAD = "from agents.sdk import define_mcp_connection\n\nconnection = define_mcp_connection("


def test_tools_list_mcp_tools_and_report_connections_that_cannot_list(tmp_path, settings, alice, client_for):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path, "OUTBOUND_ALLOW": (f"127.0.0.1:{closed}",)}
    stdio = f"command={sys.executable!r}, args=[{str(TOOLBOX)!r}]"
    write_tree(
        tmp_path / "linked",
        {
            **INSTRUCTIONS,
            "agent/mcp-connections/box.py": f"{HEAD}{stdio}, tools=['echo', 'shout'], needs_approval=['shout'])\n",
            "agent/mcp-connections/ghost.py": f"{HEAD}command='no-such-mcp-server')\n",
            "agent/host-connections/vault.py": f"{HEAD}{stdio})\n",
            "agent/host-connections/far.py": f"{HEAD}url='http://127.0.0.1:{closed}/mcp')\n",
        },
    )
    client = client_for(alice)
    body = client.get("/linked/v1/tools").json()
    tools = {tool["name"]: tool for tool in body["tools"]}
    assert sorted(tools) == ["box__echo", "box__shout"]
    assert tools["box__echo"]["source"] == "mcp" and tools["box__echo"]["connection"] == "box"
    assert tools["box__echo"]["inputSchema"]["properties"]["text"]["type"] == "string"
    assert (tools["box__echo"]["effect"], tools["box__shout"]["effect"]) == ("read", "write")  # readOnlyHint
    assert tools["box__shout"]["needsApproval"] is True
    errors = {error["connection"]: error["message"] for error in body["connectionErrors"]}
    assert sorted(errors) == ["far", "ghost"]
    assert "no-such-mcp-server" in errors["ghost"] and "No such file" in errors["ghost"]
    assert "ConnectError" in errors["far"]

    info = client.get("/linked/v1/info").json()
    assert info["connectionErrors"] == body["connectionErrors"]
    assert [c["name"] for c in info["hostConnections"]] == ["far", "vault"]
    assert client.get("/linked/v1/tools/box__echo").json()["connection"] == "box"
    assert client.get("/linked/v1/health").status_code == 200  # a broken connection does not stop the agent
