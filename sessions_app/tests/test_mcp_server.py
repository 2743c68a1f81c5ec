"""``/<slug>/v1/mcp`` and ``/<slug>/v1/mcp/tools``: the agent as an MCP server, under a
live daphne with turns on the live Celery worker, driven by the official ``mcp`` client
(and by the MCP Inspector's CLI from npm, when ``tools/mcp-inspector`` is installed)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_platform.tests.daphne import Daphne, serve_live
from agent_platform.tests.factories import issue_token
from agents.tests.trees import write_tree
from sessions_app.models import Event, Session
from sessions_app.turn_worker import execute_turn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

INSPECTOR = Path(__file__).resolve().parents[2] / "tools/mcp-inspector/node_modules/.bin/mcp-inspector"


@pytest.fixture(scope="module")
def daphne(celery_worker_process, live_agents_dir, tmp_path_factory) -> Iterator[Daphne]:
    yield from serve_live(
        tmp_path_factory, celery_worker_process, live_agents_dir, "/lab/v1/health", AGENT_DEFAULT_MODEL="test"
    )


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    """The official client on streamable HTTP, sending the bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=150)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as mcp:
            yield mcp


async def call(mcp: Client, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The tool's structured answer, checked to be the same JSON as its one text block."""
    result = await mcp.call_tool(tool, arguments)
    [text] = result.content
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content or {}, bool(result.is_error)


def test_ask_check_approve_and_call_tool_with_the_official_client(daphne, live, alice, client_for):
    token = issue_token(alice)
    direct = client_for(alice).post("/lab/v1/tools/recall", {"input": {"key": "pet"}}, format="json").json()

    async def scenario() -> None:
        async with client(f"{daphne.url}/lab/v1/mcp", token) as mcp:
            listed = {tool.name for tool in (await mcp.list_tools()).tools}
            assert listed == {"ask", "check", "approve", "call_tool"}

            done, failed = await call(mcp, "ask", {"message": "hello"})
            assert not failed and done["status"] == "completed" and done["reply"] == "echo: hello", done
            assert done["sessionId"].startswith("ses_") and done["continuationToken"].startswith("ct_")

            # A short wait answers running; check then waits for the same turn's end.
            slow, _ = await call(
                mcp, "ask", {"message": "/sleep 1.5\nlater", "sessionId": done["sessionId"], "waitMs": 50}
            )
            assert slow["status"] == "running" and "reply" not in slow, slow
            checked, _ = await call(mcp, "check", {"sessionId": done["sessionId"], "waitMs": 20_000})
            assert checked["status"] == "completed" and checked["reply"] == "echo: later", checked
            assert checked["turnId"] == slow["turnId"]

            # A parked call shows awaiting_approval; approve resumes the turn to its end.
            parked, _ = await call(
                mcp,
                "ask",
                {"message": '/call close_issue {"issue": 7}', "continuationToken": checked["continuationToken"]},
            )
            assert parked["status"] == "awaiting_approval", parked
            [pending] = parked["pendingApprovals"]
            assert pending["toolName"] == "close_issue" and pending["args"] == {"issue": 7}
            resumed, _ = await call(
                mcp, "approve", {"sessionId": parked["sessionId"], "callId": pending["callId"], "decision": "approve"}
            )
            assert resumed["status"] == "completed" and "closed #7" in resumed["reply"], resumed

            # call_tool answers what POST /v1/tools/:name answers.
            via_mcp, failed = await call(mcp, "call_tool", {"name": "recall", "input": {"key": "pet"}})
            assert not failed
            assert {k: v for k, v in via_mcp.items() if k not in {"callId", "durationMs"}} == {
                k: v for k, v in direct.items() if k not in {"callId", "durationMs"}
            }
            refused, failed = await call(mcp, "call_tool", {"name": "recall", "input": {"key": 3}})
            assert failed and refused["error"] == "invalid" and refused["status"] == 400
            for arguments in ({"message": ""}, {"message": "a\x00b"}, {"message": "hi", "waitMs": -1}):
                bad, failed = await call(mcp, "ask", arguments)
                assert failed and bad["error"] == "invalid" and bad["status"] == 400, bad

        async with client(f"{daphne.url}/lab/v1/mcp/tools", token) as tools:
            assert {tool.name for tool in (await tools.list_tools()).tools} == {
                "close_issue",
                "recall",
                "remember",
                "wait",
            }
            kept, failed = await call(tools, "remember", {"key": "pet", "value": "cat"})
            assert not failed and kept["result"] == "kept pet" and kept["toolName"] == "remember"
            needs, failed = await call(tools, "close_issue", {"issue": 1})
            assert failed and needs["error"] == "approval_required" and needs["status"] == 409

    asyncio.run(scenario())
    again = client_for(alice).post("/lab/v1/tools/recall", {"input": {"key": "pet"}}, format="json").json()
    assert again["result"] == "cat"


def test_the_endpoints_refuse_what_the_session_api_refuses(daphne, live, alice, mallory, client_for):
    alice_token, mallory_token = issue_token(alice), issue_token(mallory)
    # Without the ASGI layer (the test client, WSGI) the view answers the request itself.
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    listed = client_for(alice).post("/lab/v1/mcp/tools", listing, format="json", HTTP_ACCEPT="application/json")
    assert listed.status_code == 200, listed.content
    assert {tool["name"] for tool in listed.json()["result"]["tools"]} == {"close_issue", "recall", "remember", "wait"}
    url = f"{daphne.url}/lab/v1/mcp"
    for path in ("/lab/v1/mcp", "/lab/v1/mcp/tools"):
        for method in ("GET", "DELETE"):
            answer = httpx2.request(method, daphne.url + path, headers={"Authorization": f"Bearer {alice_token}"})
            assert answer.status_code == 405, (method, path, answer.text)
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            refused = httpx2.post(
                daphne.url + path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
            )
            assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert (
        httpx2.post(f"{daphne.url}/nope/v1/mcp", headers={"Authorization": f"Bearer {alice_token}"}).status_code == 404
    )

    async def scenario() -> None:
        async with client(url, alice_token) as mcp:
            started, _ = await call(mcp, "ask", {"message": "mine", "waitMs": 0})
        async with client(url, mallory_token) as mcp:
            for tool, arguments in [
                ("check", {"sessionId": started["sessionId"]}),
                ("ask", {"message": "hi", "sessionId": started["sessionId"]}),
                ("ask", {"message": "hi", "continuationToken": started["continuationToken"]}),
                ("approve", {"sessionId": started["sessionId"], "callId": "call_x", "decision": "approve"}),
            ]:
                refused, failed = await call(mcp, tool, arguments)
                assert failed and refused["status"] in (403, 404), (tool, refused)
                assert "mine" not in json.dumps(refused)
            unknown, failed = await call(mcp, "check", {"sessionId": "ses_nope"})
            assert failed and unknown["status"] == 404
        async with client(url, alice_token) as mcp:  # nothing of mallory's reached the session
            mine, _ = await call(mcp, "check", {"sessionId": started["sessionId"], "waitMs": 20_000})
            assert mine["turnId"] == started["turnId"] and mine["reply"] == "echo: mine", mine

    asyncio.run(scenario())


# `make test` installs the CLI wherever npm is; only a machine without Node skips this.
@pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="no Node.js/npm here, so no MCP Inspector CLI (`make mcp-inspector`)",
)
def test_the_mcp_inspector_cli_lists_the_tools(daphne, live, alice):
    token = issue_token(alice)
    listed = subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            f"{daphne.url}/lab/v1/mcp",
            "--transport",
            "http",
            "--method",
            "tools/list",
            "--header",
            f"Authorization: Bearer {token}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert {tool["name"] for tool in json.loads(listed.stdout)["tools"]} == {"ask", "check", "approve", "call_tool"}


DELEGATOR = {
    "agent/agent.py": 'from agents.sdk import define_agent\n\nagent = define_agent(model="test")\n',
    "agent/instructions.md": "You hand questions to the lab agent.",
    "agent/mcp-connections/lab.py": (
        "from agents.sdk import define_mcp_connection\n\n"
        "connection = define_mcp_connection(\n"
        '    url="{url}", headers={"Authorization": "Bearer ${LAB_TOKEN}"}, tools=["ask"]\n'
        ")\n"
    ),
}


def test_an_agent_delegates_to_another_through_its_mcp_endpoint(
    daphne, alice, client_for, settings, monkeypatch, tmp_path
):
    """One agent calls another (here on the same platform, as it would across deployments)
    through an MCP connection to its /v1/mcp: the model's lab__ask is the lab agent's turn."""
    root = tmp_path / "agents"
    url = f"{daphne.url}/lab/v1/mcp"
    write_tree(root / "delegator", {path: text.replace("{url}", url) for path, text in DELEGATOR.items()})
    # Loopback is refused unless allowed: this one server is.
    settings.PLATFORM = {
        **settings.PLATFORM,
        "AGENTS_DIR": root,
        "OUTBOUND_ALLOW": (daphne.url.removeprefix("http://"),),
    }
    monkeypatch.setenv("LAB_TOKEN", issue_token(alice))

    created = client_for(alice).post(
        "/delegator/v1/session", {"message": '/call lab__ask {"message": "hello from afar"}'}, format="json"
    )
    assert created.status_code == 201, created.content
    execute_turn(created.json()["turnId"])

    [result] = Event.objects.filter(session_id=created.json()["sessionId"], type="action.result")
    assert not result.data["isError"], result.data
    answer = result.data["output"]
    assert answer["status"] == "completed" and answer["reply"] == "echo: hello from afar", answer
    # The lab agent's turn ran in a session of the token's principal, on the lab agent.
    lab_session = Session.objects.get(pk=answer["sessionId"])
    assert (lab_session.agent.slug, lab_session.principal) == ("lab", alice)
