"""The hot path's hand-written queries (``agent_platform.rows``) read and write what the
ORM does.

Each is compared with the ORM query it stands in for, field by field, so a column added
to a model, a JSON value or a time zone that the two treat differently fails here.
"""

from __future__ import annotations

import pytest
from django.db import connection

from agents.events import EventType
from sessions_app.access import find_session
from sessions_app.eventlog import NewEvent, append_events, ended_before, read_events
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


def test_insert_writes_new_rows_as_save_would_in_one_statement(alice):
    from django.test.utils import CaptureQueriesContext

    from agent_platform.rows import insert
    from sessions_app.models import Turn

    agent = SessionFactory().agent
    session = Session(agent=agent, principal=alice, tenant_id=alice.tenant_id, title="ü", continuation_token="ct_x")
    turn = Turn(session=session, message="hi", attachments={"a.txt": "x"}, usage={"input": 1})
    with CaptureQueriesContext(connection) as queries:
        insert(session, turn)
    assert len(queries) == (1 if connection.vendor == "postgresql" else 2)
    assert not session._state.adding and not turn._state.adding
    assert fields(Session.objects.get(pk=session.pk)) == fields(session)
    assert fields(Turn.objects.get(pk=turn.pk)) == fields(turn)


def test_the_active_turns_of_a_follow_up_are_the_orm_s():
    from sessions_app.models import Turn, TurnStatus
    from sessions_app.services import ACTIVE_TURNS, _active_turns

    session = SessionFactory()
    for status in [TurnStatus.COMPLETED, TurnStatus.QUEUED, TurnStatus.RUNNING, TurnStatus.FAILED, TurnStatus.PARKED]:
        TurnFactory(session=session, status=status, conversation=[{"role": "user", "content": "hi"}])
    found = _active_turns(session)
    expected = list(Turn.objects.filter(session=session, status__in=ACTIVE_TURNS).order_by("created_at"))
    assert [fields(turn) for turn in found] == [fields(turn) for turn in expected]
    assert [turn.status for turn in found] == [TurnStatus.QUEUED, TurnStatus.RUNNING, TurnStatus.PARKED]
    assert all(turn.session is session for turn in found)


def test_marking_a_session_running_rotates_its_token_and_finds_no_unknown_session():
    from sessions_app.models import SessionStatus
    from sessions_app.services import _mark_running

    session = SessionFactory(status=SessionStatus.WAITING, continuation_token="ct_old")
    assert _mark_running(session.pk, "ct_new")
    session.refresh_from_db()
    assert (session.status, session.continuation_token) == (SessionStatus.RUNNING, "ct_new")
    assert not _mark_running("ses_nope", "ct_other")


# --- hook dispatch's queries (``sessions_app.dispatch``) ---------------------------------------


def test_session_with_agent_reads_the_session_and_its_agent_as_the_orm_does():
    from sessions_app.access import session_with_agent

    session = SessionFactory(title="ü", channel="slack")
    found = session_with_agent(session.pk)
    expected = Session.objects.select_related("agent").get(pk=session.pk)
    assert fields(found) == fields(expected)
    assert fields(found.agent) == fields(expected.agent)
    assert session_with_agent("ses_nope") is None


def test_claiming_a_batch_hands_out_the_next_events_once_and_moves_the_cursor():
    from sessions_app.dispatch import claim_batch

    turn = TurnFactory()
    session_id = turn.session_id
    append_events(session_id, [NewEvent(EventType.MESSAGE_APPENDED, {"text": f"ü{n}"}, turn.pk) for n in range(5)])
    expected = list(Event.objects.filter(session_id=session_id).order_by("index"))

    first = claim_batch(session_id, 3)
    assert [fields(event) for event in first] == [fields(event) for event in expected[:3]]
    assert Session.objects.get(pk=session_id).dispatched_index == 2
    rest = claim_batch(session_id, 3)
    assert [event.index for event in rest] == [3, 4]
    assert Session.objects.get(pk=session_id).dispatched_index == 4
    assert claim_batch(session_id, 3) == []  # nothing handed out twice
    assert claim_batch("ses_nope", 3) == []


def test_claiming_a_batch_the_sweep_skipped_meanwhile_hands_out_nothing():
    from sessions_app.dispatch import claim_batch

    session = SessionFactory()
    append_events(session.pk, [NewEvent(EventType.SESSION_STARTED), NewEvent(EventType.SESSION_WAITING)])
    Session.objects.filter(pk=session.pk).update(dispatched_index=1)  # what _skip_to_end does
    assert claim_batch(session.pk, 16) == []
    assert Session.objects.get(pk=session.pk).dispatched_index == 1


def test_a_tenants_active_subscriptions_for_an_agent_are_the_orm_s(alice):
    from django.db.models import Q

    from sessions_app.models import WebhookSubscription
    from sessions_app.tests.factories import AgentFactory
    from sessions_app.triggers.webhooks import active_subscriptions

    agent, other_agent = AgentFactory(), AgentFactory()
    tenant = alice.tenant_id
    every = WebhookSubscription.objects.create(tenant_id=tenant, url="https://a.example/", events=["*"])
    own = WebhookSubscription.objects.create(
        tenant_id=tenant, agent=agent, url="https://b.example/", events=["turn.completed"], secret_name="s"
    )
    WebhookSubscription.objects.create(tenant_id=tenant, agent=other_agent, url="https://c.example/", events=["*"])
    WebhookSubscription.objects.create(tenant_id=tenant, url="https://d.example/", events=["*"], active=False)
    found = active_subscriptions(tenant, agent.pk)
    expected = WebhookSubscription.objects.filter(tenant_id=tenant, active=True).filter(
        Q(agent__isnull=True) | Q(agent_id=agent.pk)
    )
    assert [fields(row) for row in found] == [fields(row) for row in expected.order_by("pk")]
    assert {row.pk for row in found} == {every.pk, own.pk}
    assert [row.events for row in found] == [["*"], ["turn.completed"]]


def test_update_writes_what_the_orms_update_writes():
    from datetime import UTC, datetime

    from agent_platform.rows import update
    from sessions_app.models import Turn, TurnStatus

    written, expected = TurnFactory(), TurnFactory()
    values = {
        "status": TurnStatus.COMPLETED,
        "ended_at": datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "lease_until": None,
        "usage": {"input": 3, "output": 1.5},
        "cost": 0.25,
        "conversation": [{"role": "assistant", "content": "ü", "calls": [None, True]}],
        "failure_message": "",
    }
    assert update(Turn, written.pk, **values) == 1
    Turn.objects.filter(pk=expected.pk).update(**values)
    read, wanted = fields(Turn.objects.get(pk=written.pk)), fields(Turn.objects.get(pk=expected.pk))
    for differs in ("id", "session_id", "created_at"):
        read.pop(differs), wanted.pop(differs)
    assert read == wanted
    assert update(Turn, "turn_nope", status=TurnStatus.FAILED) == 0


@pytest.mark.parametrize("shared", [True, False])
def test_the_turns_running_beside_a_claim_are_the_orm_s(shared):
    from agent_platform.tests.factories import PrincipalFactory
    from sessions_app.models import Turn, TurnStatus
    from sessions_app.scheduling import _running_beside
    from sessions_app.tests.factories import AgentFactory

    mine, theirs = PrincipalFactory(), PrincipalFactory()
    agent = AgentFactory(tenant=None if shared else mine.tenant)
    claimed = TurnFactory(session=SessionFactory(agent=agent, principal=mine), status=TurnStatus.RUNNING)
    for principal, status in [(mine, "running"), (mine, "running"), (mine, "queued"), (theirs, "running")]:
        TurnFactory(session=SessionFactory(agent=agent, principal=principal), status=status)
    TurnFactory(session=SessionFactory(principal=mine), status=TurnStatus.RUNNING)  # another agent's

    expected = Turn.objects.filter(session__agent=agent, status=TurnStatus.RUNNING).exclude(pk=claimed.pk)
    if shared:
        expected = expected.filter(session__tenant_id=mine.tenant_id)
    assert _running_beside(claimed) == expected.count() == (2 if shared else 3)


def test_the_agent_with_a_slug_is_the_orm_s():
    from agents.models import Agent
    from agents.registry import _agent_with_slug
    from sessions_app.tests.factories import AgentFactory

    agent = AgentFactory(slug="written-out")
    assert fields(_agent_with_slug("written-out")) == fields(Agent.objects.get(pk=agent.pk))
    assert _agent_with_slug("no-such-agent") is None


def test_a_turns_history_reads_the_completed_turns_the_orm_reads():
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Turn, TurnStatus
    from sessions_app.turn_worker import _completed_turns

    session = SessionFactory()
    start = timezone.now() - timedelta(minutes=10)
    for minute, status in enumerate(["completed", "failed", "completed", "completed", "queued"]):
        TurnFactory(
            session=session,
            status=status,
            created_at=start + timedelta(minutes=minute),
            conversation=[{"role": "user", "content": f"ü {minute}"}, {"role": "assistant", "content": None}],
        )
    TurnFactory(status=TurnStatus.COMPLETED, conversation=[{"role": "user", "content": "another session"}])
    before, after = start + timedelta(minutes=4), start + timedelta(seconds=30)
    for since in (None, after):
        expected = Turn.objects.filter(session=session, status=TurnStatus.COMPLETED, created_at__lt=before)
        if since is not None:
            expected = expected.filter(created_at__gt=since)
        wanted = list(expected.order_by("created_at").values_list("created_at", "conversation"))
        assert _completed_turns(session.pk, before, since) == wanted
    assert [c[0]["content"] for _, c in _completed_turns(session.pk, before, None)] == ["ü 0", "ü 2", "ü 3"]
    assert [c[0]["content"] for _, c in _completed_turns(session.pk, before, after)] == ["ü 2", "ü 3"]


def test_a_new_workspaces_memory_files_are_the_ones_the_orm_reads(alice):
    from sessions_app.host import _memory_rows, memory_files
    from sessions_app.models import FileScope, StoredFile
    from sessions_app.tests.factories import AgentFactory

    agent, other = AgentFactory(), AgentFactory()
    session = SessionFactory(agent=agent, principal=alice)

    def stored(path, content, **where):
        where = {"tenant_id": alice.tenant_id, "agent": agent, "scope": FileScope.DEPLOYMENT, **where}
        StoredFile.objects.create(path=path, content=content, size=len(content), **where)

    stored("/memory/b.md", b"second")
    stored("/memory/a.md", "ü first".encode())
    stored("/memoryless.md", b"not memory")
    stored("/notes/memory/c.md", b"not memory either")
    stored("/memory/c.md", b"session's", session=session, scope=FileScope.SESSION)
    stored("/memory/d.md", b"another agent's", agent=other)
    expected = StoredFile.objects.filter(
        tenant_id=alice.tenant_id, agent_id=agent.pk, session_id=None, path__startswith="/memory/"
    ).order_by("path")
    found = _memory_rows(alice.tenant_id, agent.pk)
    assert [(p, s, bytes(c)) for p, s, c in found] == [(f.path, f.size, bytes(f.content)) for f in expected]
    assert memory_files(alice.tenant_id, agent.pk) == {"memory/a.md": "ü first".encode(), "memory/b.md": b"second"}


def test_insert_lets_the_database_number_a_row_whose_key_is_automatic(alice):
    from django.test.utils import CaptureQueriesContext

    from agent_platform.rows import insert
    from sessions_app.models import LogLine

    before = LogLine.objects.order_by("-id").values_list("id", flat=True).first() or 0
    line = LogLine(level="INFO", logger="tools", message="ü", tenant_id=alice.tenant_id, agent_slug="weather")
    expected = LogLine.objects.create(level="INFO", logger="tools", message="ü", tenant_id=alice.tenant_id)
    with CaptureQueriesContext(connection) as queries:
        insert(line)
    assert len(queries) == 1 and line.pk is None  # nothing read back
    written = LogLine.objects.order_by("-id").first()
    assert written.id > expected.id > before
    assert (written.message, written.agent_slug, written.tenant_id, written.at) == (
        "ü",
        "weather",
        alice.tenant_id,
        line.at,
    )
    keyless = Session(agent=SessionFactory().agent, principal=alice, tenant_id=alice.tenant_id)
    keyless.pk = None  # a key of its own (not automatic) that is missing
    with pytest.raises(ValueError, match="no primary key"):
        insert(keyless)
