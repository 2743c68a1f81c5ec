"""Rows 1-3: a worker killed mid-turn, or while a call waits for approval.

The turn is taken up again (the pool child's message is redelivered, and the
sweeper hands out a turn whose lease ran out) and resumes from its log: nothing
recorded is emitted again, a call whose result is logged does not run again, a
call cut short runs once more with the same call id, and after
``TURN_MAX_ATTEMPTS`` lost workers the turn fails with reason ``worker_lost``.
"""

from __future__ import annotations

import os
import signal

import pytest

from sessions_app.models import Session, SessionStatus, Turn, TurnStatus
from sessions_app.tests.faults.stack import wait_until
from sessions_app.tests.faults.tools import call_ids, ledger, running_pid, types

pytestmark = [pytest.mark.fault, pytest.mark.slow]


@pytest.fixture
def prefork(fault):
    """The worker with the prefork pool for this test (a pool child to kill), then back."""
    fault.use_worker("prefork")
    yield fault
    fault.use_worker()


def test_a_pool_process_killed_mid_call_resumes_from_the_log(prefork, token):
    fault = prefork
    client = fault.client(token)
    started = client.start('/call effect {"key": "a"}\n/call effect {"key": "b", "hold": 8}')
    session, turn = started["sessionId"], started["turnId"]
    pid = wait_until(lambda: running_pid("b"), what="the effect call b to run")
    assert pid in fault.pool_children()
    before = client.events(session)  # a's result is logged; b is holding
    assert types(before).count("action.result") == 1

    os.kill(pid, signal.SIGKILL)
    end = client.wait_turn_ended(session, turn)

    assert end["type"] == "turn.completed", end
    assert end["data"]["result"] == 'done: effect -> "did a"\ndone: effect -> "did b"'
    events = client.events(session)
    assert events[: len(before)] == before  # nothing recorded was lost or changed
    assert types(events).count("turn.started") == 1
    assert Turn.objects.get(pk=turn).attempts == 2
    calls, found = call_ids(events), ledger()
    assert (found["run"][calls["a"]], found["effect"][calls["a"]]) == (1, 1)  # logged: not run again
    assert (found["run"][calls["b"]], found["effect"][calls["b"]]) == (2, 1)  # cut short: once more, same id
    client.assert_usable(session)


def test_a_worker_that_dies_right_after_a_result_is_logged_does_not_run_the_call_again(fault, token):
    client = fault.client(token)
    fault.arm("after-action.result")
    started = client.start('/call effect {"key": "a"}\n/call effect {"key": "b"}')
    end = client.wait_turn_ended(started["sessionId"], started["turnId"])

    assert end["type"] == "turn.completed", end
    events = client.events(started["sessionId"])
    calls, found = call_ids(events), ledger()
    assert found["run"] == {calls["a"]: 1, calls["b"]: 1}
    assert found["effect"] == {calls["a"]: 1, calls["b"]: 1}
    assert Turn.objects.get(pk=started["turnId"]).attempts == 2
    assert types(events).count("actions.requested") == 1


def test_a_worker_that_dies_mid_stream_sends_the_rest_of_the_text_once(fault, token):
    client = fault.client(token)
    fault.arm("after-message.appended")
    started = client.start("/stream 3000")
    end = client.wait_turn_ended(started["sessionId"], started["turnId"])

    assert end["type"] == "turn.completed", end
    events = client.events(started["sessionId"])
    text = "".join(f"t{n} " for n in range(3000))
    assert "".join(e["data"]["text"] for e in events if e["type"] == "message.appended") == text
    assert [e["data"]["text"] for e in events if e["type"] == "message.completed"] == [text]
    assert types(events).count("step.started") == 1
    assert Turn.objects.get(pk=started["turnId"]).attempts == 2


def test_a_call_that_kills_its_worker_every_time_fails_the_turn_after_three_attempts(fault, token):
    client = fault.client(token)
    started = client.start('/call effect {"key": "poison", "die": true}')
    end = client.wait_turn_ended(started["sessionId"], started["turnId"], timeout=60)

    assert end["type"] == "turn.failed"
    assert end["data"]["reason"] == "worker_lost", end
    events = client.events(started["sessionId"])
    call = call_ids(events)["poison"]
    assert ledger()["run"][call] == 3  # exactly TURN_MAX_ATTEMPTS runs, then no loop
    assert Turn.objects.get(pk=started["turnId"]).status == TurnStatus.FAILED
    client.assert_usable(started["sessionId"])


def test_a_whole_worker_killed_mid_call_is_replaced_and_the_turn_finishes(fault, token):
    client = fault.client(token)
    started = client.start('/call effect {"key": "a"}\n/call effect {"key": "b", "hold": 8}')
    session, turn = started["sessionId"], started["turnId"]
    wait_until(lambda: running_pid("b"), what="the effect call b to run")
    before = client.events(session)

    fault.kill_worker()  # main process and pool: its message stays unacked in Redis
    fault.restart_worker()
    end = client.wait_turn_ended(session, turn, timeout=15 + 10)  # the visibility timeout, or the sweeper first

    assert end["type"] == "turn.completed", end
    events = client.events(session)
    assert events[: len(before)] == before
    calls, found = call_ids(events), ledger()
    assert found["effect"] == {calls["a"]: 1, calls["b"]: 1}
    assert found["run"] == {calls["a"]: 1, calls["b"]: 2}
    client.assert_usable(session)


def test_a_worker_that_dies_while_its_turn_ends_leaves_nothing_half_done_and_the_turn_ends_once(fault, token):
    """The turn's end, its record and the settling of its session are one transaction: a
    worker that dies inside it commits none of them, and the turn is taken up again from
    its log (the logged call is not run again) and ends once."""
    client = fault.client(token)
    fault.arm("before-settle")
    started = client.start('/call effect {"key": "s"}', mode="task")
    session, turn = started["sessionId"], started["turnId"]

    events = client.wait_for(session, "session.completed", timeout=15 + 10)  # the visibility timeout, or the sweeper

    assert types(events).count("turn.completed") == 1
    assert types(events).count("turn.started") == 1
    assert types(events)[-2:] == ["turn.completed", "session.completed"]
    assert Session.objects.get(pk=session).status == SessionStatus.COMPLETED
    assert Turn.objects.get(pk=turn).attempts == 2  # died once while ending, then ended
    calls, found = call_ids(events), ledger()
    assert (found["run"][calls["s"]], found["effect"][calls["s"]]) == (1, 1)


def park(client, key: str) -> tuple[str, str, str]:
    started = client.start(f'/call guarded_effect {{"key": "{key}"}}')
    session, turn = started["sessionId"], started["turnId"]
    wait_until(lambda: Turn.objects.filter(pk=turn, status=TurnStatus.PARKED).exists(), what="the turn to park")
    [requested] = [e for e in client.events(session) if e["type"] == "action.approval_requested"]
    return session, turn, requested["data"]["callId"]


def test_a_call_waiting_for_approval_survives_its_worker_and_runs_once_when_approved(fault, token):
    client = fault.client(token)
    session, turn, call = park(client, "g")
    assert Turn.objects.get(pk=turn).lease_until is None  # no worker holds a parked turn

    fault.kill_worker()
    fault.restart_worker()
    status, _ = client.approve(session, call)
    assert status == 200
    end = client.wait_turn_ended(session, turn)

    assert end["type"] == "turn.completed", end
    events = client.events(session)
    assert types(events).count("action.approval_requested") == 1
    assert types(events).count("action.result") == 1
    assert ledger()["effect"] == {call: 1}


def test_a_worker_that_dies_as_the_turn_parks_parks_it_again_without_asking_twice(fault, token):
    client = fault.client(token)
    fault.arm("after-action.approval_requested")  # dies before the parked state is saved
    session, turn, call = park(client, "g")
    assert Turn.objects.get(pk=turn).attempts == 0  # parking starts the count afresh

    fault.arm("after-action.approval_resolved")  # and dies again right after the decision
    assert client.approve(session, call)[0] == 200
    end = client.wait_turn_ended(session, turn)

    assert end["type"] == "turn.completed", end
    events = client.events(session)
    assert types(events).count("action.approval_requested") == 1
    assert types(events).count("action.approval_resolved") == 1
    assert ledger()["effect"] == {call: 1}
    client.assert_usable(session)
