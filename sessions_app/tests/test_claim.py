"""Claiming a turn (``sessions_app.scheduling.claim_turn``): only a queued turn, or a
running one whose lease ran out, is claimed, once; the claimed turn comes back with
its session and agent exactly as the ORM reads them (on Postgres the claim is one
written-out statement)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.eventlog import read_events
from sessions_app.models import Session, SessionStatus, Turn, TurnStatus
from sessions_app.scheduling import claim_turn, lease, sweep_turns
from sessions_app.tests.factories import TurnFactory

pytestmark = pytest.mark.django_db


def _values(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in type(row)._meta.concrete_fields}


def test_a_queued_turn_is_claimed_once_with_its_session_and_agent_as_the_orm_reads_them():
    queued = TurnFactory(attachments={"notes.md": "x"})

    claimed = claim_turn(queued.pk)

    assert claimed is not None
    expected = Turn.objects.select_related("session__agent").get(pk=queued.pk)
    assert _values(claimed) == _values(expected)
    assert (claimed.status, claimed.attempts) == (TurnStatus.RUNNING, 1)
    assert claimed.lease_until is not None and claimed.started_at is not None
    assert _values(claimed.session) == _values(expected.session)
    assert _values(claimed.session.agent) == _values(expected.session.agent)
    assert claim_turn(queued.pk) is None  # running under a live lease: not ours


def test_a_running_turn_whose_lease_ran_out_is_claimed_again_and_a_finished_one_never():
    lost = TurnFactory(status=TurnStatus.RUNNING, attempts=1, lease_until=timezone.now() - timedelta(seconds=1))
    done = TurnFactory(status=TurnStatus.COMPLETED)
    parked = TurnFactory(status=TurnStatus.PARKED)

    taken_up = claim_turn(lost.pk)

    assert taken_up is not None and taken_up.attempts == 2
    assert claim_turn(done.pk) is None
    assert claim_turn(parked.pk) is None
    assert claim_turn("turn_does_not_exist") is None


@pytest.mark.django_db(transaction=True)
def test_an_attempt_overtaken_by_another_stops_and_records_nothing(live_agents_dir, settings, alice, client_for):
    """A worker whose turn was taken up by another attempt (its lease ran out) writes
    nothing more: neither its results nor a failure; the turn is the new attempt's."""
    import threading

    from django.db import connections
    from django.db.models import F

    from sessions_app.models import Event
    from sessions_app.turn_worker import execute_turn

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    response = client_for(alice).post("/lab/v1/session", {"message": '/call wait {"seconds": 1}'}, format="json")
    session_id, turn_id = response.json()["sessionId"], response.json()["turnId"]
    worker = threading.Thread(target=lambda: (execute_turn(turn_id), connections.close_all()))
    worker.start()
    deadline = time.monotonic() + 10
    while not Event.objects.filter(session_id=session_id, type="actions.requested").exists():
        assert time.monotonic() < deadline, "the call never started"
        time.sleep(0.02)
    Turn.objects.filter(pk=turn_id).update(attempts=F("attempts") + 1)  # another worker claimed it
    worker.join(timeout=20)

    types = list(Event.objects.filter(session_id=session_id).order_by("index").values_list("type", flat=True))
    assert "action.result" not in types and "turn.failed" not in types and "turn.completed" not in types
    assert Turn.objects.get(pk=turn_id).status == TurnStatus.RUNNING  # left to the attempt that owns it


def test_the_sweep_settles_a_session_whose_worker_died_before_settling_it():
    """A parked turn's record and its session's settling are two transactions: a worker
    lost between them leaves the session running with no turn to run (as did any ended
    turn before its end and settling became one). The sweep settles it."""
    turn = TurnFactory(status=TurnStatus.COMPLETED)
    session = turn.session
    Session.objects.filter(pk=session.pk).update(
        status=SessionStatus.RUNNING, updated_at=timezone.now() - lease() - timedelta(seconds=1)
    )
    busy = TurnFactory(status=TurnStatus.COMPLETED)  # one still being settled by its worker: left alone
    Session.objects.filter(pk=busy.session_id).update(status=SessionStatus.RUNNING, updated_at=timezone.now())

    assert sweep_turns() == 1

    assert Session.objects.get(pk=session.pk).status == SessionStatus.WAITING
    assert [event.type for event in read_events(session.pk)] == ["session.waiting"]
    assert Session.objects.get(pk=busy.session_id).status == SessionStatus.RUNNING
