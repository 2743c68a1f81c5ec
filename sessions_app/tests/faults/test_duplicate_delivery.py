"""Row 6: the same turn task delivered more than once does the turn once.

While the worker runs the turn, the task is re-published twice with one task id
(as a broker redelivery would) and run once more in this process (a second
worker); after the turn ended, once more. The lease claim turns every extra
delivery into a no-op: one set of events, one run and one effect per call.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from sessions_app.models import Turn
from sessions_app.tasks import run_queued_turn
from sessions_app.tests.faults.stack import wait_until
from sessions_app.tests.faults.tools import call_ids, ledger, open_gate, running_pid, types
from sessions_app.turn_worker import execute_turn

pytestmark = [pytest.mark.fault, pytest.mark.slow]


def test_a_turn_task_delivered_again_during_and_after_the_turn_runs_once(fault, token):
    client = fault.client(token)
    started = client.start('/call effect {"key": "a", "gate": "a"}')
    session, turn = started["sessionId"], started["turnId"]
    wait_until(lambda: running_pid("a"), what="the call to run")

    duplicate_id = f"duplicate-{turn}"
    for _ in range(2):
        run_queued_turn.apply_async((turn,), task_id=duplicate_id, queue=fault.queue)

    def second_worker() -> None:
        try:
            execute_turn(turn)  # claims nothing: the turn's lease is live
        finally:
            connections.close_all()

    beside = threading.Thread(target=second_worker)
    beside.start()
    beside.join(timeout=30)
    open_gate(session, "a")
    end = client.wait_turn_ended(session, turn)
    assert end["type"] == "turn.completed"

    # The worker takes both re-published copies once the turn is done; each claims nothing.
    def both_consumed() -> bool:
        log = fault.worker.log_path.read_text(errors="replace")
        return log.count(f"run_turn[{duplicate_id}] succeeded") == 2

    wait_until(both_consumed, what="the worker to take both duplicates")
    execute_turn(turn)  # and a late one, after the end
    events = client.events(session)
    assert types(events).count("turn.started") == 1
    assert types(events).count("turn.completed") == 1
    calls, found = call_ids(events), ledger()
    assert found["run"] == {calls["a"]: 1} and found["effect"] == {calls["a"]: 1}
    assert Turn.objects.get(pk=turn).attempts == 1
    client.assert_usable(session)
