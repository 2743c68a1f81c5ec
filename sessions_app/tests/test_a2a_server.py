"""The agent as an A2A server, driven by the official ``a2a-sdk`` client against a live
daphne and worker: the card, send, stream, a follow-up in the same context, get,
cancel, and the session API's auth and tenancy."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from agent_platform.tests.daphne import serve_live
from agent_platform.tests.factories import issue_token
from sessions_app.models import Session


@pytest.fixture
def server(celery_worker_process, live_agents_dir, live, tmp_path_factory):
    yield from serve_live(tmp_path_factory, celery_worker_process, live_agents_dir, "/lab/v1/health")


def message(text: str, context_id: str = "", task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{time.monotonic_ns()}",
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
            task_id=task_id,
        )
    )


async def collect(client, request: SendMessageRequest) -> list:
    return [event async for event in client.send_message(request)]


def rpc(url: str, token: str | None, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a2a_round_trip_with_the_official_client(server, alice, mallory):
    base = f"{server.url}/lab"
    alice_token, mallory_token = issue_token(alice), issue_token(mallory)

    async def scenario() -> dict:
        auth = {"Authorization": f"Bearer {alice_token}"}
        async with httpx.AsyncClient(headers=auth, timeout=60) as http:
            card = await A2ACardResolver(http, base).get_agent_card()
            blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)

            # SendMessage waits for the turn: completed, with the reply.
            [sent] = await collect(blocking, message("hello there"))
            # SendStreamingMessage in the same context: the session continues.
            streamed = await collect(streaming, message("/stream 3\nagain", context_id=sent.task.context_id))
            got = await blocking.get_task(GetTaskRequest(id=streamed[0].task.id))

            # A long turn, canceled while it runs.
            slow = message("/sleep 30")
            slow.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
            [submitted] = await collect(blocking, slow)
            deadline = time.monotonic() + 30
            while (await blocking.get_task(GetTaskRequest(id=submitted.task.id))).status.state != (
                TaskState.TASK_STATE_WORKING
            ):
                assert time.monotonic() < deadline, "the slow turn never started"
                await asyncio.sleep(0.1)
            canceled = await blocking.cancel_task(CancelTaskRequest(id=submitted.task.id))
            with pytest.raises(TaskNotCancelableError):
                await blocking.cancel_task(CancelTaskRequest(id=sent.task.id))
            with pytest.raises(TaskNotFoundError):
                await blocking.get_task(GetTaskRequest(id="turn_nope"))

            # A call that needs approval: input-required; approved over HTTP, the same task completes.
            asking = await collect(streaming, message('/call close_issue {"issue": 7}'))
            parked = asking[0].task
            events = (await http.get(f"{base}/v1/session/{parked.context_id}/events")).json()["events"]
            [call_id] = [e["data"]["callId"] for e in events if e["type"] == "action.approval_requested"]
            decided = await http.post(
                f"{base}/v1/session/{parked.context_id}/approvals/{call_id}", json={"decision": "approve"}
            )
            assert decided.status_code == 200, decided.text
            while (resumed := await blocking.get_task(GetTaskRequest(id=parked.id))).status.state != (
                TaskState.TASK_STATE_COMPLETED
            ):
                assert time.monotonic() < deadline + 30, f"the approved task never completed: {resumed}"
                await asyncio.sleep(0.1)

            # A 0.3 client (the SDK's own, on the card's 0.3 interface) sends the 0.3
            # names (message/stream, tasks/get) and is answered in 0.3's shapes.
            old_card = AgentCard()
            old_card.CopyFrom(card)
            del old_card.supported_interfaces[0]
            old = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(old_card)
            old_streamed = await collect(old, message("/stream 2\nfrom 0.3", context_id=sent.task.context_id))
            old_got = await old.get_task(GetTaskRequest(id=old_streamed[0].task.id))

        # Another tenant sees neither alice's task nor her context.
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {mallory_token}"}, timeout=60) as http:
            theirs = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            with pytest.raises(TaskNotFoundError):
                await theirs.get_task(GetTaskRequest(id=sent.task.id))
            with pytest.raises(TaskNotFoundError):
                await collect(theirs, message("let me in", context_id=sent.task.context_id))

        # No token: 401 before any JSON-RPC is read.
        async with httpx.AsyncClient(timeout=60) as http:
            anonymous = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            with pytest.raises(A2AClientError, match="401"):
                await collect(anonymous, message("hi"))
        return {
            "card": card,
            "sent": sent,
            "streamed": streamed,
            "got": got,
            "canceled": canceled,
            "old_streamed": old_streamed,
            "old_got": old_got,
            "asking": asking,
            "resumed": resumed,
        }

    seen = asyncio.run(scenario())

    card = seen["card"]
    assert card.name == "lab"
    assert card.capabilities.streaming
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        (f"{base}/v1/a2a", "JSONRPC", "1.0"),
        (f"{base}/v1/a2a", "JSONRPC", "0.3"),
    ]
    assert {"wait", "remember", "recall"} <= {skill.id for skill in card.skills}
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"

    task: Task = seen["sent"].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [part.text for part in task.artifacts[0].parts] == ["echo: hello there"]
    assert task.status.message.parts[0].text == "echo: hello there"

    streamed = seen["streamed"]
    first, updates = streamed[0].task, streamed[1:]
    assert first.context_id == task.context_id and first.id != task.id
    assert first.status.state == TaskState.TASK_STATE_SUBMITTED and not first.artifacts
    states = [u.status_update.status.state for u in updates if u.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING and states[-1] == TaskState.TASK_STATE_COMPLETED
    assert updates[-1].HasField("status_update"), "the final status comes last"
    chunks = [u.artifact_update for u in updates if u.HasField("artifact_update")]
    assert len(chunks) >= 2 and chunks[-1].last_chunk
    # Applying the chunks (append or replace) gives the reply tasks/get returns.
    reply = ""
    for chunk in chunks:
        reply = (reply if chunk.append else "") + "".join(part.text for part in chunk.artifact.parts)
    assert reply == "t0 t1 t2 echo: again"
    got: Task = seen["got"]
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert got.artifacts[0].parts[0].text == reply
    assert [m.parts[0].text for m in got.history] == ["/stream 3\nagain", reply]
    old_states = [u.status_update.status.state for u in seen["old_streamed"] if u.HasField("status_update")]
    assert old_states[-1] == TaskState.TASK_STATE_COMPLETED
    old_got: Task = seen["old_got"]
    assert old_got.status.state == TaskState.TASK_STATE_COMPLETED
    assert old_got.artifacts[0].parts[0].text == "t0 t1 echo: from 0.3"
    # The three tasks were turns of one session, and that session is alice's.
    session = Session.objects.get(pk=task.context_id)
    assert session.principal_id == alice.pk and session.turns.count() == 3

    assert seen["canceled"].status.state == TaskState.TASK_STATE_CANCELED

    last = seen["asking"][-1].status_update
    assert last.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "close_issue" in last.status.message.parts[0].text
    assert seen["resumed"].artifacts[0].parts[0].text == 'done: close_issue -> "closed #7"'

    # A body that is not a JSON object is the platform's 400; JSON-RPC errors carry the
    # request's id; no token is a 401 envelope.
    url = f"{base}/v1/a2a"
    for bad in (b"{not json", b"[]"):
        status, body = rpc(url, alice_token, bad)
        assert status == 400 and body["error"] in ("parse_error", "invalid_request"), body
    status, body = rpc(url, alice_token, json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tasks/nope"}).encode())
    assert status == 200 and body["id"] == 7 and body["error"]["code"] == -32601
    empty = {"jsonrpc": "2.0", "id": "x", "method": "SendMessage", "params": {"message": {"parts": []}}}
    status, body = rpc(url, alice_token, json.dumps(empty).encode())
    assert status == 200 and body["id"] == "x" and body["error"]["code"] == -32602
    status, body = rpc(url, None, json.dumps(empty).encode())
    assert status == 401 and body["error"] == "not_authenticated"
