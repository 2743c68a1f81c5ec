"""MCP over streamable HTTP through the outbound policy (RELIABILITY.md row 14): the
legitimate local server is reached only because the test's allow-list names it; every
refused address form, a name that resolves to loopback (rebinding) and a redirect to a
private address fail at connect time as a call error, and the loopback canary receives
nothing. Config-time refusal is ``test_outbound.py``'s (discovery diagnostics)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents import sdk
from agents.discovery import discover
from agents.discovery.surface import Entry
from agents.runtime.mcp.connections import McpCallError, McpConnections
from agents.runtime.outbound import OutboundPolicy
from agents.tests.runtime.test_outbound import REFUSED
from agents.tests.trees import INSTRUCTIONS, write_tree

TOOLBOX = Path(__file__).parent / "mcp_servers" / "toolbox.py"


class _Recorder(BaseHTTPRequestHandler):
    """Records every request; on the redirector, answers 307 to ``server.location``."""

    def _any(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        location = getattr(self.server, "location", None)
        self.send_response(307 if location else 200)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _any

    def log_message(self, *args: object) -> None:
        pass


def _serve(host: str, location: str | None = None) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), _Recorder)
    server.hits = []  # type: ignore[attr-defined]
    server.location = location  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def toolbox_http():
    """The toolbox MCP server over streamable HTTP on 127.0.0.2."""
    port = _free_port("127.0.0.2")
    process = subprocess.Popen([sys.executable, str(TOOLBOX), "--http", "127.0.0.2", str(port)])
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.2", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.05)
    yield f"127.0.0.2:{port}"
    process.kill()
    process.wait()


def _rebinding(host: str, port: int) -> list[str]:
    """DNS as an attacker runs it: a public-looking name answers loopback."""
    if host == "rebind.example.com":
        return ["127.0.0.1"]
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _call(mcp: McpConnections, connection: str) -> object:
    return asyncio.run(mcp.call(connection, "echo", {"text": "over http"}))


def test_http_connections_reach_only_what_the_policy_allows(tmp_path, toolbox_http):
    canary = _serve("127.0.0.1")
    cport = canary.server_address[1]
    redirector = _serve("127.0.0.2", location=f"http://127.0.0.1:{cport}/mcp")
    rport = redirector.server_address[1]
    allow = (toolbox_http, f"127.0.0.2:{rport}")
    policy = OutboundPolicy(allow=allow, resolver=_rebinding)
    remote = f'from agents.sdk import define_mcp_connection\n\nconnection = define_mcp_connection(url="http://{toolbox_http}/mcp")\n'
    folder = write_tree(tmp_path / "remote", {**INSTRUCTIONS, "agent/host-connections/remote.py": remote})
    surface, _ = discover(folder, "remote", outbound=policy)
    assert surface.errors == []
    try:
        mcp = McpConnections(surface, policy=policy)
        assert _call(mcp, "remote") == {"echo": "over http"}

        # Config a tree could no longer pass discovery with, or a name that rebinds at
        # connect time: each refused before any connection is made.
        spelled = [
            f"{scheme}://{host}:{cport}/mcp"
            for scheme in ("http", "https")
            for host in ("127.0.0.1", "localhost", "2130706433", "0x7f000001", "127.1", "[::ffff:127.0.0.1]")
        ]
        urls = [url for url, _ in REFUSED] + spelled + [f"https://rebind.example.com:{cport}/mcp"]
        for position, url in enumerate(urls):
            surface.host_connections[f"bad{position}"] = Entry(sdk.McpConnection(url=url), folder / "bad.py")
        surface.host_connections["hop"] = Entry(sdk.McpConnection(url=f"http://127.0.0.2:{rport}/mcp"), folder)
        for position, url in enumerate(urls):
            with pytest.raises(McpCallError, match="refused") as refused:
                _call(mcp, f"bad{position}")
            assert "http" in str(refused.value) or "address" in str(refused.value), url
        with pytest.raises(McpCallError):
            _call(mcp, "hop")  # the redirector answers 307 to the canary: not followed
        assert redirector.hits, "the redirector was asked"
        assert canary.hits == [], f"the canary was reached: {canary.hits}"
    finally:
        for server in (canary, redirector):
            server.shutdown()
            server.server_close()
