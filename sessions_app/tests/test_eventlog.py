from __future__ import annotations

import pytest
import redis
from django.db import transaction

from agents.events import EventType
from sessions_app import doorbell
from sessions_app.eventlog import (
    Fence,
    NewEvent,
    StaleAttempt,
    UnknownSession,
    append_event,
    append_events,
    read_events,
)
from sessions_app.models import Event, Session, Turn, TurnStatus
from sessions_app.tests.factories import SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


def test_first_event_of_a_session_has_index_zero_and_the_next_follow_on():
    session = SessionFactory()
    first = append_event(session.id, EventType.SESSION_STARTED)
    second, third = append_events(
        session.id,
        [NewEvent(EventType.MESSAGE_RECEIVED, {"text": "hi"}), NewEvent(EventType.SESSION_WAITING)],
    )
    assert [first.index, second.index, third.index] == [0, 1, 2]
    session.refresh_from_db()
    assert session.next_event_index == 3


def test_events_are_read_back_in_index_order_from_a_start_index():
    session = SessionFactory()
    append_events(session.id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": str(n)}) for n in range(5)])
    assert [event.data["text"] for event in read_events(session.id, start_index=2)] == ["2", "3", "4"]
    assert [event.index for event in read_events(session.id, start_index=1, limit=2)] == [1, 2]


def test_the_record_a_client_sees_has_the_documented_fields():
    turn = TurnFactory()
    event = append_event(turn.session_id, EventType.TURN_STARTED, {"attempt": 1}, turn_id=turn.id)
    record = read_events(turn.session_id)[0].as_record()
    assert record == {
        "type": "turn.started",
        "index": 0,
        "sessionId": turn.session_id,
        "turnId": turn.id,
        "at": event.at.isoformat().replace("+00:00", "Z"),
        "data": {"attempt": 1},
    }
    assert record["at"].endswith("Z")


def test_a_record_without_a_turn_has_no_turn_id():
    session = SessionFactory()
    append_event(session.id, EventType.SESSION_STARTED)
    assert "turnId" not in read_events(session.id)[0].as_record()


def test_appending_to_an_unknown_session_raises_and_writes_nothing():
    with pytest.raises(UnknownSession):
        append_event("ses_doesnotexist", EventType.SESSION_STARTED)
    assert not Event.objects.exists()


def test_an_event_type_outside_the_vocabulary_is_refused_before_anything_is_written():
    session = SessionFactory()
    with pytest.raises(ValueError, match=r"not\.a\.type"):
        append_events(session.id, [NewEvent(EventType.SESSION_STARTED), NewEvent("not.a.type")])  # type: ignore[arg-type]
    assert not Event.objects.filter(session=session).exists()
    assert Session.objects.get(pk=session.pk).next_event_index == 0


def test_appending_nothing_is_a_no_op():
    session = SessionFactory()
    assert append_events(session.id, []) == []
    assert Session.objects.get(pk=session.pk).next_event_index == 0


def test_an_append_fenced_to_an_overtaken_attempt_writes_nothing():
    turn = TurnFactory(status=TurnStatus.RUNNING, attempts=2)
    started = NewEvent(EventType.TURN_STARTED, {}, turn.id)
    append_events(turn.session_id, [started], fence=Fence(turn.id, 2))  # the current attempt

    with pytest.raises(StaleAttempt):
        append_events(turn.session_id, [started, started], fence=Fence(turn.id, 1))  # a worker that lost its lease
    Turn.objects.filter(pk=turn.id).update(status=TurnStatus.COMPLETED)
    with pytest.raises(StaleAttempt):
        append_events(turn.session_id, [started], fence=Fence(turn.id, 2))  # the turn is over

    assert [event.index for event in read_events(turn.session_id)] == [0]
    session = Session.objects.get(pk=turn.session_id)
    assert session.next_event_index == 1


class Doorbells:
    """The rings a stream of each session hears: a Redis subscriber on their doorbells."""

    def __init__(self, url: str, *session_ids: str) -> None:
        self.pubsub = redis.Redis.from_url(url).pubsub()
        self.pubsub.subscribe(*(doorbell.channel(session_id) for session_id in session_ids))
        for _ in session_ids:  # until Redis confirms each subscription
            assert self.pubsub.get_message(timeout=5)["type"] == "subscribe"

    def heard(self) -> list[tuple[str, int]]:
        """What rang since the last call (waits briefly for rings in flight)."""
        rings = []
        while (message := self.pubsub.get_message(timeout=0.3)) is not None:
            session_id = message["channel"].decode().removeprefix(doorbell.channel(""))
            rings.append((session_id, int(message["data"])))
        return rings


@pytest.mark.django_db(transaction=True)
def test_a_transaction_rings_each_of_its_sessions_doorbells_once_with_its_last_index(settings):
    first, second = SessionFactory(), SessionFactory()
    doorbells = Doorbells(settings.PLATFORM["DOORBELL_REDIS_URL"], first.id, second.id)
    text = NewEvent(EventType.MESSAGE_APPENDED, {"text": "x"})

    append_events(first.id, [text])  # its own transaction: rings at once
    assert doorbells.heard() == [(first.id, 0)]

    with transaction.atomic():
        append_events(first.id, [text, text])
        append_events(second.id, [text])
        append_events(first.id, [text])
        assert doorbells.heard() == []  # nothing before the commit
    # One ring per session, each with its transaction's last index: every stream of the
    # session reads the table once for the commit, not once per append.
    assert sorted(doorbells.heard()) == sorted([(first.id, 3), (second.id, 0)])


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_savepoint_takes_its_appends_out_of_the_ring(settings):
    session = SessionFactory()
    doorbells = Doorbells(settings.PLATFORM["DOORBELL_REDIS_URL"], session.id)
    text = NewEvent(EventType.MESSAGE_APPENDED, {"text": "x"})

    with transaction.atomic():
        append_events(session.id, [text])
        try:
            with transaction.atomic():
                append_events(session.id, [text, text])
                raise RuntimeError("the inner part fails")
        except RuntimeError:
            pass
    # The ring announces only what committed (a stream would otherwise look for index 2
    # until something else wrote it).
    assert doorbells.heard() == [(session.id, 0)]
    assert [event.index for event in read_events(session.id)] == [0]

    with transaction.atomic():
        append_events(session.id, [text])
        with transaction.atomic():
            append_events(session.id, [text])  # a released savepoint commits with the rest
    assert doorbells.heard() == [(session.id, 1), (session.id, 2)]  # the savepoint's own ring, after
