"""The Python client (``agent_platform_client``, installed from clients/python) against
a live platform: daphne and a Celery worker on the test database, one server for the
module. Sessions, streams resumed after the connection is cut, approvals, tool calls,
eval runs, deployments (their turns run in the sandbox), errors, and ``agent run --url``."""

from __future__ import annotations

import asyncio
import json
from io import StringIO

import pytest
from agent_platform_client import ApiError, AsyncClient, Client, Event, StreamLost, parse_sse
from cutting_proxy import CuttingProxy
from django.core.management import CommandError, call_command

from agent_platform.tests.daphne import serve_live
from agent_platform.tests.factories import issue_token


@pytest.fixture(scope="module")
def server(celery_worker_process, live_agents_dir, tmp_path_factory):
    yield from serve_live(tmp_path_factory, celery_worker_process, live_agents_dir, "/lab/v1/health")


@pytest.fixture
def token(live, alice) -> str:
    return issue_token(alice)


def gapless(events: list[Event]) -> bool:
    return [event.index for event in events] == list(range(len(events)))


def test_start_follow_up_and_continue_a_session(server, token):
    with Client(server.url, token) as client:
        first = client.run("lab", "hello", title="greeting")
        assert (first.status, first.reply) == ("completed", "echo: hello")
        second = client.run("lab", "again", session_id=first.session_id)
        assert (second.status, second.reply, second.session_id) == ("completed", "echo: again", first.session_id)
        # The continuation token continues the same session.
        third = client.run("lab", "third", continuation_token=second.continuation_token)
        assert third.session_id == first.session_id and third.reply == "echo: third"
        [listed] = [s for s in client.sessions("lab") if s["sessionId"] == first.session_id]
        assert listed["title"] == "greeting"
        # The state first: the log read after it holds at least as much (session.waiting may follow).
        count = client.session("lab", first.session_id)["eventCount"]
        events = client.events("lab", first.session_id)
        assert gapless(events) and len(events) >= count
        assert [e.data["text"] for e in events if e.type == "message.received"] == ["hello", "again", "third"]


@pytest.mark.parametrize("stream_format", ["ndjson", "sse"])
def test_a_stream_cut_mid_body_resumes_from_the_last_index(server, token, stream_format):
    proxy = CuttingProxy(server.port, cut_after=400, cuts=2)
    try:
        with Client(proxy.url, token, stream_format=stream_format, backoff=0.05) as client:
            started = client.start("lab", "/stream 20\n" + "long line " * 80, mode="task")
            events = list(client.stream("lab", started.session_id))
    finally:
        proxy.close()
    assert gapless(events), [e.index for e in events]
    assert events[-1].type == "session.completed"
    assert "".join(e.data["text"] for e in events if e.type == "message.appended").startswith("t0 t1 ")
    # Cut twice, resumed twice: each reconnect asked for the index after the last one received.
    streams = proxy.stream_requests()
    assert len(streams) == 3
    resumed_at = [int(head.split(b"startIndex=")[1].split(b" ")[0]) for head in streams]
    assert resumed_at[0] == 0 and 0 < resumed_at[1] <= resumed_at[2] < len(events)
    if stream_format == "sse":
        assert b"accept: text/event-stream" in streams[0].lower()
        assert f"last-event-id: {resumed_at[1] - 1}".encode() in streams[1].lower()


def test_a_stream_that_keeps_dropping_gives_up(server, token):
    proxy = CuttingProxy(server.port, cut_after=0, cuts=10)
    try:
        with Client(proxy.url, token, max_reconnects=2, backoff=0.01) as client:
            started = client.start("lab", "hello", mode="task")
            with pytest.raises(StreamLost) as lost:
                list(client.stream("lab", started.session_id))
    finally:
        proxy.close()
    assert lost.value.last_index == -1 and len(proxy.stream_requests()) == 3


def test_async_client_streams_decides_approvals_and_calls_tools(server, token):
    async def scenario() -> dict:
        async with AsyncClient(server.url, token) as client:
            parked = await client.run("lab", '/call close_issue {"issue": 7}')
            pending = await client.pending_approvals("lab", parked.session_id)
            decided = await client.decide("lab", parked.session_id, pending[0]["callId"], "approve")
            resumed = await client.wait_turn("lab", parked, on_event=collected.append)
            with pytest.raises(ApiError) as twice:
                await client.decide("lab", parked.session_id, pending[0]["callId"], "deny")
            tool = await client.call_tool("weather", "get_weather", {"city": "Lyon"})
            tools = await client.tools("weather")
            streamed = []
            async for event in client.stream("lab", parked.session_id):
                streamed.append(event)
                if event.index == resumed.next_index - 1:
                    break
            return locals()

    collected: list[Event] = []
    seen = asyncio.run(scenario())
    assert seen["parked"].status == "parked"
    assert seen["pending"] == [
        {
            "callId": seen["pending"][0]["callId"],
            "toolName": "close_issue",
            "args": {"issue": 7},
            "turnId": seen["parked"].turn_id,
        }
    ]
    assert seen["decided"]["decision"] == "approve"
    assert seen["resumed"].status == "completed" and "closed #7" in seen["resumed"].reply
    assert collected and all(e.turn_id == seen["parked"].turn_id for e in collected)
    assert seen["twice"].value.status == 409
    assert seen["tool"]["ok"] and seen["tool"]["toolName"] == "get_weather" and not seen["tool"]["isError"]
    assert "get_weather" in [t["name"] for t in seen["tools"]]
    assert gapless(seen["streamed"])


def test_eval_runs_start_follow_and_cancel(server, token):
    with Client(server.url, token) as client:
        assert "ok/echo" in [case["id"] for case in client.eval_cases("judge")["datapoints"]]
        run = client.start_eval_run("judge", tags=["smoke"])
        snapshots = list(client.follow_eval_run("judge", run["runId"], interval=0.1))
        assert snapshots[-1]["status"] == "completed" and snapshots[-1]["summary"]["passed"] == 2
        hanging = client.start_eval_run("judge", tags=["hang"])
        cancelled = client.cancel_eval_run("judge", hanging["runId"])
        assert cancelled["status"] == "cancelled"
        with pytest.raises(ApiError) as again:
            client.cancel_eval_run("judge", hanging["runId"])
        assert again.value.status == 409
        assert [r["runId"] for r in client.eval_runs("judge")][:2] == [hanging["runId"], run["runId"]]


def test_errors_carry_the_status_and_code(server, token, mallory):
    with Client(server.url, "apt_wrong") as stranger:
        with pytest.raises(ApiError) as unauthorized:
            stranger.start("lab", "hi")
    assert unauthorized.value.status == 401
    with Client(server.url, token) as client:
        session = client.start("lab", "hi", mode="task")
        with pytest.raises(ApiError) as missing:
            client.session("lab", "ses_nope")
        with pytest.raises(ApiError) as bad:
            client.start("lab", "hi", mode="sideways")
        with pytest.raises(ApiError) as unknown_tool:
            client.call_tool("lab", "nope")
    with Client(server.url, issue_token(mallory)) as other:
        with pytest.raises(ApiError) as not_yours:
            list(other.stream("lab", session.session_id))
    assert (missing.value.status, bad.value.status, unknown_tool.value.status) == (404, 400, 404)
    assert not_yours.value.status == 403 and not_yours.value.code


def test_agent_run_url_prints_the_deltas_as_they_stream(server, token):
    out = StringIO()
    call_command("agent", "run", "lab", "/stream 4\nhi there", "--url", server.url, "--token", token, stdout=out)
    printed = out.getvalue()
    assert printed.startswith("t0 t1 t2 t3 echo: hi there")
    assert "status: completed" in printed and "session: ses_" in printed
    # A call that asks for approval, approved through the route; --json: each event as it arrives.
    out = StringIO()
    message = '/call close_issue {"issue": 9}'
    call_command(
        "agent", "run", "lab", message, "--url", server.url, "--token", token, "--approve", "--json", stdout=out
    )
    types = [json.loads(line)["type"] for line in out.getvalue().splitlines()]
    assert "action.approval_requested" in types and "action.approval_resolved" in types
    assert types[-1] == "turn.completed"
    with pytest.raises(CommandError) as parked:
        call_command("agent", "run", "lab", message, "--url", server.url, "--token", token, stdout=StringIO())
    assert parked.value.returncode == 3
    with pytest.raises(CommandError) as refused:
        call_command("agent", "run", "lab", "hi", "--url", server.url, "--token", "apt_wrong", stdout=StringIO())
    assert refused.value.returncode == 2 and "401" in str(refused.value)


def test_sse_parsing_follows_the_standard():
    stream = (
        ": a comment\r\ndata: first\r\ndata:  second\r\nid: 7\r\n\r\nevent: x\ndata\n\nretry: 10\ndata: {}\n\nid: 8\n\n"
    )
    # Split at every position: the parser keeps what is incomplete for the next chunk.
    for cut in range(len(stream)):
        messages = list(parse_sse([stream[:cut], stream[cut:]]))
        assert [(m.event, m.data, m.id) for m in messages] == [
            ("message", "first\n second", "7"),
            ("x", "", "7"),
            ("message", "{}", "7"),
        ]
        assert messages[2].retry == 10


def test_deploy_an_agent_activate_it_and_run_a_turn_on_it(server, token, alice):
    from agent_platform.tests.factories import staff_user_for
    from agents.tests.deploying import tar_gz

    staff_user_for(alice)
    with Client(server.url, token) as client:
        assert client.create_agent("cli-revs")["slug"] == "cli-revs"
        with pytest.raises(ApiError) as broken:
            client.upload_deployment("cli-revs", tar_gz("broken"))
        assert broken.value.status == 422 and broken.value.body["diagnostics"]
        uploaded = client.upload_deployment("cli-revs", tar_gz("v1"))
        assert uploaded["status"] == "ready" and len(uploaded["hash"]) == 64
        assert client.activate_deployment("cli-revs", uploaded["id"])["active"] is True
        turn = client.run("cli-revs", "/call version {}")
        assert turn.status == "completed"
        assert [e.data["output"] for e in turn.events if e.type == "action.result"] == ["v1"]
