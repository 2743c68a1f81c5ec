"""Sessions over HTTP, turns on a real Celery worker: what a client sees."""

from __future__ import annotations

import pytest

from sessions_app.tests.live import assert_gapless, assert_turns_ended_once, types

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_echo_turn_runs_on_the_worker_and_the_session_waits(live):
    client = live()
    started = client.start("hello there")
    assert started["sessionId"].startswith("ses_") and started["turnId"].startswith("turn_")
    events = client.wait_for(started["sessionId"], "session.waiting")
    assert types(events) == [
        "session.started",
        "agent.bound",
        "message.received",
        "turn.started",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
        "session.waiting",
    ]
    assert events[-2]["data"]["result"] == "echo: hello there"
    assert events[-2]["turnId"] == started["turnId"]
    assert client.state(started["sessionId"])["status"] == "waiting"


def test_a_tool_call_runs_with_host_storage(live):
    client = live()
    session = client.start('/call remember {"key": "colour", "value": "teal"}')["sessionId"]
    client.wait_for(session, "session.waiting")
    follow = client.follow_up(session, '/call recall {"key": "colour"}')
    assert follow.status_code == 202
    events = client.wait_for(session, "turn.completed", count=2)
    results = [e["data"]["output"] for e in events if e["type"] == "action.result"]
    assert results == ["kept colour", "teal"]


def test_a_follow_up_sees_the_conversation_and_rotates_the_token(live):
    client = live()
    first = client.start("first")
    client.wait_for(first["sessionId"], "session.waiting")
    response = client.client.post(
        "/lab/v1/session", {"message": "second", "continuationToken": first["continuationToken"]}, format="json"
    )
    assert response.status_code == 201
    second = response.json()
    assert second["sessionId"] == first["sessionId"]
    assert second["continuationToken"] != first["continuationToken"]
    events = client.wait_for(first["sessionId"], "session.waiting", count=2)
    assert [e["data"]["result"] for e in events if e["type"] == "turn.completed"] == ["echo: first", "echo: second"]
    stale = client.client.post(
        "/lab/v1/session", {"message": "third", "continuationToken": first["continuationToken"]}, format="json"
    )
    assert stale.status_code == 409
    assert stale.json()["error"] == "stale_continuation_token"


def test_an_approval_parks_the_turn_and_approving_finishes_it(live):
    client = live()
    session = client.start('/call close_issue {"issue": 7}')["sessionId"]
    events = client.wait_for(session, "action.approval_requested")
    call_id = events[-1]["data"]["callId"]
    assert client.state(session)["status"] == "running"
    decided = client.client.post(
        f"/lab/v1/session/{session}/approvals/{call_id}", {"decision": "approve"}, format="json"
    )
    assert decided.status_code == 200
    events = client.wait_for(session, "session.waiting")
    assert [e["data"]["output"] for e in events if e["type"] == "action.result"] == ["closed #7"]
    again = client.client.post(f"/lab/v1/session/{session}/approvals/{call_id}", {"decision": "deny"}, format="json")
    assert again.status_code == 409
    assert_turns_ended_once(events)


def test_denying_an_approval_returns_an_error_to_the_model(live):
    client = live()
    session = client.start('/call close_issue {"issue": 8}')["sessionId"]
    call_id = client.wait_for(session, "action.approval_requested")[-1]["data"]["callId"]
    client.client.post(
        f"/lab/v1/session/{session}/approvals/{call_id}", {"decision": "deny", "reason": "not yet"}, format="json"
    )
    events = client.wait_for(session, "session.waiting")
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["isError"] and "not yet" in result["output"]["error"]


def test_an_unknown_approval_is_404(live):
    client = live()
    session = client.start("hi")["sessionId"]
    response = client.client.post(
        f"/lab/v1/session/{session}/approvals/call_nope", {"decision": "approve"}, format="json"
    )
    assert response.status_code == 404


def test_preempt_interrupts_the_running_turn_and_runs_the_new_message(live):
    client = live()
    session = client.start('/call wait {"seconds": 30}')["sessionId"]
    client.wait_for(session, "actions.requested")
    assert client.follow_up(session, "never mind").status_code == 202
    events = client.wait_for(session, "session.waiting")
    ends = [
        (e["type"], e["data"].get("message") or e["data"].get("result"))
        for e in events
        if e["type"].startswith("turn.") and e["type"] != "turn.started"
    ]
    assert ends == [("turn.failed", "turn interrupted"), ("turn.completed", "echo: never mind")]
    assert_gapless(events)
    assert_turns_ended_once(events)


def test_coalesce_drains_queued_messages_into_one_turn(live):
    client = live()
    session = client.start('/call wait {"seconds": 1.5}')["sessionId"]
    client.wait_for(session, "actions.requested")
    turn_ids = {
        client.follow_up(session, word, admission="coalesce").json()["turnId"] for word in ["one", "two", "three"]
    }
    assert len(turn_ids) == 1
    events = client.wait_for(session, "session.waiting")
    results = [e["data"]["result"] for e in events if e["type"] == "turn.completed"]
    assert results[-1] == "echo: one\ntwo\nthree"
    assert len(results) == 2


def test_enqueue_runs_each_message_as_its_own_turn_in_order(live):
    client = live()
    session = client.start('/call wait {"seconds": 1}')["sessionId"]
    client.wait_for(session, "actions.requested")
    for word in ["a", "b"]:
        assert client.follow_up(session, word, admission="enqueue").status_code == 202
    events = client.wait_for(session, "turn.completed", count=3)
    assert [e["data"]["result"] for e in events if e["type"] == "turn.completed"][1:] == ["echo: a", "echo: b"]


def test_reject_answers_409_while_a_turn_runs(live):
    client = live()
    session = client.start('/call wait {"seconds": 1}')["sessionId"]
    client.wait_for(session, "actions.requested")
    response = client.follow_up(session, "hello?", admission="reject")
    assert response.status_code == 409
    assert response.json()["error"] == "session_busy"
    client.wait_for(session, "session.waiting")
    assert client.follow_up(session, "now?", admission="reject").status_code == 202


def test_stop_interrupts_without_a_new_message(live):
    client = live()
    session = client.start('/call wait {"seconds": 30}')["sessionId"]
    client.wait_for(session, "actions.requested")
    response = client.client.post(f"/lab/v1/session/{session}/stop")
    assert response.status_code == 202 and response.json() == {"stopped": True}
    events = client.wait_for(session, "session.waiting")
    assert [e["data"] for e in events if e["type"] == "turn.failed"] == [{"message": "turn interrupted"}]
    # The tool saw the stop through its signal rather than waiting out its 30 s.
    assert client.client.post(f"/lab/v1/session/{session}/stop").json() == {"stopped": False}


def test_a_task_session_completes_and_refuses_follow_ups(live):
    client = live()
    session = client.start("do it once", mode="task")["sessionId"]
    events = client.wait_for(session, "session.completed")
    assert types(events)[-1] == "session.completed"
    response = client.follow_up(session, "and again")
    assert response.status_code == 409
    assert response.json()["error"] == "task_session"


def test_a_failing_turn_fails_a_task_session(live):
    client = live()
    session = client.start("/fail nope", mode="task")["sessionId"]
    events = client.wait_for(session, "session.failed")
    assert [e["data"] for e in events if e["type"] == "turn.failed"] == [{"message": "nope"}]


def test_workspace_files_reach_the_workspace(live):
    client = live(slug="weather")
    session = client.start("hello", workspaceFiles={"notes/trip.md": "Lyon in May"})["sessionId"]
    events = client.wait_for(session, "session.waiting")
    assert events[2]["data"] == {"text": "hello", "files": ["notes/trip.md"]}


def test_twenty_concurrent_sessions_are_all_gapless(live):
    import threading

    client = live()
    sessions: list[str] = []
    lock = threading.Lock()

    def open_session(n: int) -> None:
        from django.db import connections

        try:
            session = live().start(f"session {n}")["sessionId"]
            with lock:
                sessions.append(session)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=open_session, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(sessions) == 20
    for session in sessions:
        events = client.wait_for(session, "session.waiting", timeout=60)
        assert_gapless(events)
        assert_turns_ended_once(events)


def test_max_running_turns_queues_the_extra_turn_until_one_finishes(live):
    client = live(slug="capped")
    first = client.start('/call wait {"seconds": 3}')["sessionId"]
    client.wait_for(first, "actions.requested")
    second = client.start("me too")["sessionId"]
    queued = client.wait_for(second, "turn.queued")
    assert [e["data"] for e in queued if e["type"] == "turn.queued"] == [{"runningTurns": 1, "cap": 1}]
    first_events = client.wait_for(first, "session.waiting")
    second_events = client.wait_for(second, "session.waiting")
    first_done = next(e["at"] for e in first_events if e["type"] == "turn.completed")
    second_started = next(e["at"] for e in second_events if e["type"] == "turn.started")
    assert second_started >= first_done
