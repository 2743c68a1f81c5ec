"""The hot path's hand-written queries (``agent_platform.rows``) read what the ORM reads.

Each is compared with the ORM query it stands in for, field by field, so a column added
to a model, a JSON value or a time zone that the two read differently fails here.
"""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app.access import find_session
from sessions_app.eventlog import NewEvent, append_events, ended_before, read_events
from sessions_app.events import EventType
from sessions_app.models import Event, Session
from sessions_app.tests.factories import SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


def fields(instance):
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_find_session_reads_the_session_and_its_agent_as_the_orm_does():
    session = SessionFactory(title="résumé", dry_run=True, continuation_key="thread-1")
    found = find_session(session.agent.slug, session.pk)
    expected = Session.objects.select_related("agent").get(pk=session.pk)
    assert fields(found) == fields(expected)
    assert fields(found.agent) == fields(expected.agent)
    assert found.agent_id == found.agent.pk
    assert not found._state.adding and found._state.db == "default"


def test_find_session_is_none_for_an_unknown_id_or_another_agent():
    session = SessionFactory()
    other = SessionFactory()
    assert find_session(session.agent.slug, "ses_nope") is None
    assert find_session(other.agent.slug, session.pk) is None


def test_read_events_reads_what_the_orm_reads():
    turn = TurnFactory()
    data = [{"text": "ü", "n": 1.5, "nested": {"list": [1, None, True]}}, {}, {"big": 10**16}]
    append_events(turn.session_id, [NewEvent(EventType.MESSAGE_APPENDED, item, turn.pk) for item in data])
    found = read_events(turn.session_id)
    expected = list(Event.objects.filter(session_id=turn.session_id).order_by("index"))
    assert [fields(event) for event in found] == [fields(event) for event in expected]
    assert [event.as_record() for event in found] == [event.as_record() for event in expected]
    assert [event.index for event in read_events(turn.session_id, 1, limit=1)] == [1]
    assert read_events(turn.session_id, 3) == []


def test_ended_before_is_true_only_past_the_end_of_an_ended_log():
    session = SessionFactory()
    append_events(session.id, [NewEvent(EventType.SESSION_STARTED), NewEvent(EventType.SESSION_WAITING)])
    assert not ended_before(session.id, 5)
    append_events(session.id, [NewEvent(EventType.SESSION_COMPLETED)])  # index 2
    assert not ended_before(session.id, 2)
    assert ended_before(session.id, 3)
    assert not ended_before(SessionFactory().id, 3)


def test_ended_before_uses_the_index_of_ended_logs_even_as_a_prepared_statement():
    if connection.vendor != "postgresql":
        pytest.skip("a Postgres plan")
    from sessions_app.eventlog import _ended_before_sql

    # A prepared statement's generic plan knows no parameter values: the index's
    # condition must follow from the query's own text.
    statement = _ended_before_sql().replace("%s", "$1", 1).replace("%s", "$2", 1)
    with connection.cursor() as cursor:
        cursor.execute(f"PREPARE ended_before_test(text, int) AS {statement}")
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN EXECUTE ended_before_test('ses_x', 10)")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("DEALLOCATE ended_before_test")
    assert "event_session_end" in plan, plan
