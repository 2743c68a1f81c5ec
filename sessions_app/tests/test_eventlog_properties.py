"""Hypothesis on ``append_events``: random batches from random concurrent writers, some
of them refused (an unknown type, data Postgres cannot store, a missing session). The
log always ends up with indexes exactly 0..n-1, every accepted batch contiguous and in
order with its data unchanged, and nothing at all of a refused batch."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.events import EventType
from sessions_app.eventlog import NewEvent, UnknownSession, append_events
from sessions_app.models import Event, Session
from sessions_app.tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Any JSON text Postgres can store: no NUL, no lone surrogates (the API refuses those).
TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=10,
)


def as_json_numbers(value: Any) -> Any:
    """``value`` with every number as a float: jsonb keeps a number's value, not Python's
    int/float distinction (``3.8e16`` comes back as the integer ``38000000000000000``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [as_json_numbers(item) for item in value]
    return {key: as_json_numbers(item) for key, item in value.items()}


@dataclass(frozen=True)
class Batch:
    writer: int
    number: int
    events: tuple[tuple[str, Any], ...]
    refused_because: str | None = None  # why append_events must write nothing


def _batch(writer: int, number: int, draw: st.DrawFn) -> Batch:
    events = draw(st.lists(st.tuples(st.sampled_from(list(EventType)), JSON), min_size=1, max_size=5))
    flaw = draw(st.sampled_from([None, None, None, "unknown type", "NUL in data", "unknown session"]))
    if flaw == "unknown type":
        events = [*events, ("message.exploded", {})]
    elif flaw == "NUL in data":
        events = [*events, (EventType.MESSAGE_APPENDED.value, {"text": "a\x00b"})]
    return Batch(
        writer, number, tuple((str(t), {"writer": writer, "batch": number, "data": d}) for t, d in events), flaw
    )


@st.composite
def plans(draw: st.DrawFn) -> list[list[Batch]]:
    writers = draw(st.integers(min_value=1, max_value=4))
    return [
        [_batch(writer, number, draw) for number in range(draw(st.integers(min_value=1, max_value=4)))]
        for writer in range(writers)
    ]


def _write(session_id: str, batches: list[Batch], start: threading.Barrier, errors: list[BaseException]) -> None:
    try:
        start.wait()
        for batch in batches:
            target = "ses_missing" if batch.refused_because == "unknown session" else session_id
            events = [NewEvent(type, data) for type, data in batch.events]  # type: ignore[arg-type]
            try:
                append_events(target, events)
            except (ValueError, UnknownSession, DatabaseError):
                assert batch.refused_because, (batch, "was refused")
            else:
                assert not batch.refused_because, (batch, "was accepted")
    except BaseException as error:  # surfaced by the test thread
        errors.append(error)
    finally:
        connections.close_all()


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent appends are checked on Postgres (set DATABASE_URL)")


def test_random_concurrent_batches_keep_the_log_gapless_ordered_and_unchanged(postgres_only):
    @settings(
        max_examples=int(os.environ.get("FUZZ_EXAMPLES_LOG", "15")),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(plan=plans())
    def run(plan: list[list[Batch]]) -> None:
        session = SessionFactory()
        start, errors = threading.Barrier(len(plan)), []
        threads = [threading.Thread(target=_write, args=(session.pk, batches, start, errors)) for batches in plan]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors

        events = list(Event.objects.filter(session=session).order_by("index").values_list("index", "type", "data"))
        assert [index for index, _, _ in events] == list(range(len(events)))
        assert Session.objects.get(pk=session.pk).next_event_index == len(events)
        accepted = [batch for batches in plan for batch in batches if not batch.refused_because]
        assert len(events) == sum(len(batch.events) for batch in accepted)
        for batch in accepted:
            mine = [(i, t, d) for i, t, d in events if d["writer"] == batch.writer and d["batch"] == batch.number]
            indexes = [index for index, _, _ in mine]
            assert indexes == list(range(indexes[0], indexes[0] + len(batch.events)))
            assert [(t, as_json_numbers(d)) for _, t, d in mine] == [(t, as_json_numbers(d)) for t, d in batch.events]

    run()
