"""SSRF (RELIABILITY.md §1 row 14): MCP connection URLs and agent-initiated HTTP never
reach the platform's own network. Config time refuses local, private, metadata and
oddly spelled addresses, other schemes and plain http (with a diagnostic at discovery);
connect time checks every request, every redirect and every resolved address, and
connects to the address it checked. A canary server on 127.0.0.1 must see no request."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from agents.discovery import discover
from agents.runtime.outbound import OutboundPolicy, OutboundRefused, guarded_client
from agents.tests.trees import INSTRUCTIONS, write_tree

REFUSED = [
    ("http://127.0.0.1/mcp", "only https"),
    ("https://127.0.0.1/mcp", "loopback"),
    ("https://localhost:8443/mcp", "this machine"),
    ("https://api.localhost/mcp", "this machine"),
    ("https://169.254.169.254/latest/meta-data/", "link-local"),
    ("https://[fe80::1]/", "link-local"),
    ("https://[::ffff:127.0.0.1]/mcp", "loopback"),
    ("https://[::1]/mcp", "loopback"),
    ("https://0x7f000001/mcp", "loopback"),
    ("https://2130706433/mcp", "loopback"),
    ("https://0177.0.0.1/mcp", "loopback"),
    ("https://127.1/mcp", "loopback"),
    ("https://10.1.2.3/mcp", "private"),
    ("https://192.168.0.10/mcp", "private"),
    ("https://100.64.0.1/mcp", "not a public address"),
    ("https://0.0.0.0/mcp", "address"),
    ("https://224.0.0.1/mcp", "multicast"),
    ("file:///etc/passwd", "only https"),
    ("gopher://example.com/", "only https"),
    ("ftp://example.com/", "only https"),
    ("http://example.com/mcp", "only https"),
    ("https:///mcp", "no host"),
    ("https://example.com:99999/", "not a valid URL"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_a_url_into_the_platforms_network_is_refused_at_config_time(url, reason):
    with pytest.raises(OutboundRefused, match=reason):
        OutboundPolicy().check_url(url)


@pytest.mark.parametrize(
    "url", ["https://docs.example.com/mcp", "https://93.184.216.34:8443/x", "HTTPS://Example.COM./"]
)
def test_a_public_https_url_is_accepted_without_any_lookup(url):
    assert OutboundPolicy(resolver=_no_dns).check_url(url)[0] == "https"


def test_the_allow_list_names_exactly_what_it_allows():
    policy = OutboundPolicy(allow=("127.0.0.1:8765", "mcp.internal", "10.0.0.0/8"))
    assert policy.check_url("http://127.0.0.1:8765/mcp") == ("http", "127.0.0.1", 8765)
    assert policy.check_url("http://mcp.internal:9000/")[1] == "mcp.internal"
    assert policy.check_url("https://10.9.8.7/")[1] == "10.9.8.7"
    for url in ["http://127.0.0.1:8766/mcp", "https://127.0.0.2:8765/", "https://192.168.1.1/"]:
        with pytest.raises(OutboundRefused):
            policy.check_url(url)


def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"config time must not resolve {host}")


# --- discovery ------------------------------------------------------------------------------------

CONNECTION = """
    from agents.sdk import define_mcp_connection

    connection = define_mcp_connection(url={url!r})
"""


PLUGIN = "from agents.sdk import plugin_mount\n\nkit = plugin_mount(path='../../vendor/kit')\n"
HELPER = "from agents.sdk import define_agent\n\nagent = define_agent(description='Helps.')\n"


@pytest.mark.parametrize("slot", ["mcp-connections", "host-connections"])
def test_discovery_reports_a_refused_connection_and_the_agent_is_not_served(tmp_path, slot):
    files = {**INSTRUCTIONS, f"agent/{slot}/metadata.py": CONNECTION.format(url="https://169.254.169.254/")}
    surface, loader = discover(write_tree(tmp_path / "demo", files))
    loader.unload()
    [diagnostic] = surface.errors
    assert diagnostic.code.id == "agents.E013"
    assert diagnostic.path == f"agent/{slot}/metadata.py"
    assert "'metadata' is refused" in diagnostic.message and "link-local" in diagnostic.message


def test_a_plugins_mcp_json_and_a_subagents_connection_are_checked_too(tmp_path):
    files = {
        **INSTRUCTIONS,
        "agent/extensions/kit.py": PLUGIN,
        "vendor/kit/.claude-plugin/plugin.json": json.dumps({"name": "kit", "version": "1.0.0"}),
        "vendor/kit/mcp.json": json.dumps({"mcpServers": {"local": {"url": "http://127.0.0.1:9/mcp"}}}),
        "agent/subagents/helper/agent.py": HELPER,
        "agent/subagents/helper/instructions.md": "Help.",
        "agent/subagents/helper/mcp-connections/inner.py": CONNECTION.format(url="https://10.0.0.5/mcp"),
    }
    surface, loader = discover(write_tree(tmp_path / "demo", files))
    loader.unload()
    refused = [d.message for d in surface.errors if "is refused" in d.message]
    assert len(refused) == 2, [str(d) for d in surface.all_diagnostics()]


def test_an_allowed_local_server_passes_discovery(tmp_path):
    files = {**INSTRUCTIONS, "agent/mcp-connections/dev.py": CONNECTION.format(url="http://127.0.0.1:8765/mcp")}
    surface, loader = discover(write_tree(tmp_path / "demo", files), outbound=OutboundPolicy(allow=("127.0.0.1:8765",)))
    loader.unload()
    assert surface.errors == []


# --- connect time -----------------------------------------------------------------------------------


class Recorder(BaseHTTPRequestHandler):
    """Records each request; ``/redirect?to=URL`` answers 302 to URL, anything else 200."""

    def do_GET(self) -> None:
        self.server.hits.append((self.path, self.headers.get("Host")))  # type: ignore[attr-defined]
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"fine"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(host: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), Recorder)
    server.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def servers():
    """A canary on 127.0.0.1 that nothing may reach, and the legitimate local server on
    127.0.0.2 that the allow list opens."""
    canary, legit = _serve("127.0.0.1"), _serve("127.0.0.2")
    yield canary, legit
    assert canary.hits == [], f"the canary was reached: {canary.hits}"
    for server in (canary, legit):
        server.shutdown()
        server.server_close()


def _port(server: ThreadingHTTPServer) -> int:
    return int(server.server_address[1])


def _get(policy: OutboundPolicy, url: str) -> httpx2.Response:
    async def fetch() -> httpx2.Response:
        async with guarded_client(policy) as client:
            return await client.get(url)

    return asyncio.run(fetch())


def _stub(answers: dict[str, list[str]]):
    def resolve(host: str, port: int) -> list[str]:
        if host in answers:
            return answers[host]
        return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]

    return resolve


def test_the_allowed_local_server_is_reached(servers):
    _, legit = servers
    policy = OutboundPolicy(allow=(f"127.0.0.2:{_port(legit)}",))
    assert _get(policy, f"http://127.0.0.2:{_port(legit)}/ok").text == "fine"
    assert legit.hits == [("/ok", f"127.0.0.2:{_port(legit)}")]


@pytest.mark.parametrize("spelling", ["127.0.0.1", "2130706433", "0x7f000001", "127.1", "[::ffff:127.0.0.1]"])
def test_the_canary_is_refused_in_every_spelling(servers, spelling):
    canary, legit = servers
    policy = OutboundPolicy(allow=(f"127.0.0.2:{_port(legit)}",))
    for scheme in ("http", "https"):
        with pytest.raises(OutboundRefused):
            _get(policy, f"{scheme}://{spelling}:{_port(canary)}/steal")


@pytest.mark.parametrize("target", ["http://127.0.0.1:{canary}/steal", "https://2130706433:{canary}/steal"])
def test_a_redirect_to_a_private_address_is_refused_before_connecting(servers, target):
    canary, legit = servers
    policy = OutboundPolicy(allow=(f"127.0.0.2:{_port(legit)}",))
    location = target.format(canary=_port(canary))
    with pytest.raises(OutboundRefused):
        _get(policy, f"http://127.0.0.2:{_port(legit)}/redirect?to={location}")
    assert [path for path, _ in legit.hits] == [f"/redirect?to={location}"]


def test_a_name_that_resolves_to_a_private_address_is_refused_at_connect_time(servers):
    canary, _ = servers
    # Accepted at config time (a name), refused when it resolves (DNS rebinding).
    policy = OutboundPolicy(resolver=_stub({"rebind.example.com": ["127.0.0.1"]}))
    assert policy.check_url(f"https://rebind.example.com:{_port(canary)}/")
    with pytest.raises(OutboundRefused, match="loopback"):
        _get(policy, f"https://rebind.example.com:{_port(canary)}/steal")


def test_one_private_answer_among_public_ones_is_enough_to_refuse(servers):
    canary, _ = servers
    policy = OutboundPolicy(resolver=_stub({"mixed.example.com": ["93.184.216.34", "127.0.0.1"]}))
    with pytest.raises(OutboundRefused, match=r"127\.0\.0\.1"):
        _get(policy, f"https://mixed.example.com:{_port(canary)}/steal")


def test_a_redirect_to_a_name_that_rebinds_is_refused(servers):
    canary, legit = servers
    policy = OutboundPolicy(
        allow=(f"127.0.0.2:{_port(legit)}",), resolver=_stub({"evil.example.com": ["169.254.169.254", "127.0.0.1"]})
    )
    with pytest.raises(OutboundRefused):
        _get(policy, f"http://127.0.0.2:{_port(legit)}/redirect?to=https://evil.example.com:{_port(canary)}/")


def test_the_connection_goes_to_the_address_that_was_checked(servers):
    _, legit = servers
    # The name resolves (once, here) to the allowed server; the request still names the host.
    policy = OutboundPolicy(allow=("legit.example.com",), resolver=_stub({"legit.example.com": ["127.0.0.2"]}))
    response = _get(policy, f"http://legit.example.com:{_port(legit)}/ok")
    assert response.text == "fine"
    assert legit.hits == [("/ok", f"legit.example.com:{_port(legit)}")]


def test_the_platform_policy_comes_from_the_setting(settings):
    from agents.config import outbound_policy

    settings.PLATFORM = {**settings.PLATFORM, "OUTBOUND_ALLOW": ("127.0.0.1:8765",)}
    assert outbound_policy().check_url("http://127.0.0.1:8765/mcp")[2] == 8765
    settings.PLATFORM = {**settings.PLATFORM, "OUTBOUND_ALLOW": ()}
    with pytest.raises(OutboundRefused):
        outbound_policy().check_url("http://127.0.0.1:8765/mcp")
