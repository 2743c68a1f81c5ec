"""Event indexes stay gapless and unique with many writers on one session (real Postgres)."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection, connections

from agents.events import EventType
from sessions_app.eventlog import NewEvent, append_events
from sessions_app.models import Event
from sessions_app.tests.factories import SessionFactory

WRITERS = 12
APPENDS_PER_WRITER = 40


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers are checked on Postgres (set DATABASE_URL)")


def _writer(session_id: str, writer: int, start: threading.Barrier, errors: list[BaseException]) -> None:
    rng = random.Random(writer)
    try:
        start.wait()
        for n in range(APPENDS_PER_WRITER):
            batch = [
                NewEvent(EventType.MESSAGE_APPENDED, {"writer": writer, "n": n, "part": part})
                for part in range(rng.choice([1, 1, 2, 5]))
            ]
            append_events(session_id, batch)
    except BaseException as error:  # surfaced by the test thread below
        errors.append(error)
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_on_one_session_get_gapless_unique_indexes(postgres_only):
    session = SessionFactory()
    start = threading.Barrier(WRITERS)
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_writer, args=(session.id, w, start, errors)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors

    events = list(Event.objects.filter(session=session).order_by("index").values("index", "data"))
    assert [event["index"] for event in events] == list(range(len(events)))
    session.refresh_from_db()
    assert session.next_event_index == len(events)

    # Every writer's events are all there, and a batch stays contiguous and in order.
    for writer in range(WRITERS):
        mine = [(e["index"], e["data"]) for e in events if e["data"]["writer"] == writer]
        assert sorted({data["n"] for _, data in mine}) == list(range(APPENDS_PER_WRITER))
        for n in range(APPENDS_PER_WRITER):
            batch = [(index, data["part"]) for index, data in mine if data["n"] == n]
            indexes = [index for index, _ in batch]
            assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
            assert [part for _, part in batch] == list(range(len(batch)))


@pytest.mark.django_db(transaction=True)
def test_writers_on_different_sessions_each_get_their_own_sequence(postgres_only):
    sessions = [SessionFactory() for _ in range(4)]
    start = threading.Barrier(8)
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_writer, args=(sessions[w % 4].id, w, start, errors)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    for session in sessions:
        indexes = list(Event.objects.filter(session=session).order_by("index").values_list("index", flat=True))
        assert indexes == list(range(len(indexes)))
        assert len(indexes) > 0
