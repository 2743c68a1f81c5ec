"""A sandboxed agent's channel route: the handler runs in the runner, validates its body
with its own model there, and starts a session through ``ctx.send`` answered on the
platform's side; a body its model refuses is the route's 502, never a 500."""

from __future__ import annotations

import pytest

from agents.sandbox import bwrap_path
from agents.tests.deploying import deployed_agent
from agents.tests.trees import write_tree

pytestmark = pytest.mark.django_db(transaction=True)

DESK = {
    "agent/agent.py": "from agents.sdk import define_agent\n\nagent = define_agent()\n",
    "agent/instructions.md": "You answer the desk.",
    "agent/channels/desk.py": """
        from pydantic import BaseModel, Field

        from agents.sdk import ChannelContext, Route, define_channel


        class Ask(BaseModel):
            question: str = Field(min_length=1)


        async def ask(ctx: ChannelContext, body: Ask) -> dict:
            return await ctx.send(body.question, key="desk-1")


        channel = define_channel(routes=[Route("POST", "/ask", handler=ask, body=Ask)])
    """,
}


def test_a_sandboxed_route_starts_a_session_through_ctx_send(alice, client_for, settings, tmp_path):
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap")
    folder = write_tree(tmp_path / "desk", DESK)
    deployed_agent(alice.tenant, "desk", folder)
    client = client_for(alice)
    info = client.get("/desk/v1/info").json()
    [route] = info["channels"][0]["routes"]
    assert route["bodySchema"]["required"] == ["question"]  # the tree's own model, described
    created = client.post("/desk/v1/channels/desk/ask", {"question": "where is my order?"}, format="json")
    assert created.status_code == 201, created.content
    again = client.post("/desk/v1/channels/desk/ask", {"question": "and now?"}, format="json")
    assert again.status_code == 202 and again.json()["sessionId"] == created.json()["sessionId"]
    refused = client.post("/desk/v1/channels/desk/ask", {"question": ""}, format="json")
    assert refused.status_code == 502
    assert refused.json()["error"] == "channel_handler_failed" and "ValidationError" in refused.json()["message"]
