"""Events reach the session channel's handlers and the hooks: in order, once at most,
with failures logged and skipped (DESIGN.md §5, sessions_app.dispatch)."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from celery.signals import task_prerun
from django.db import connection, connections

from agent_platform.celery import app as platform_app
from agent_platform.celery import create_app
from agent_platform.embedded import EmbeddedServices
from agents import registry
from agents.events import EventType
from agents.registry import get_agent, surface_for
from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.dispatch import BATCH_SIZE, dispatch_pending, remember_session, request_dispatch, sweep_undispatched
from sessions_app.eventlog import NewEvent, append_event, append_events
from sessions_app.models import KVEntry, LogLine, Session
from sessions_app.tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

# A hook (or channel) file: each handler appends [name, index, type] to a JSON-lines file.
RECORDER = """
    import json

    from agents.sdk import {definer}

    CALLS = {calls!r}


    def record(name):
        # Called event first: (event, ctx) from a hook, (event, channel, ctx) from a channel.
        def handler(event, *channel_and_ctx):
            *channel, ctx = channel_and_ctx
            assert ctx.session.id == event["sessionId"] and ctx.agent == ctx.session.agent
            if channel:
                assert channel[0].id == ctx.channel.id and channel[0].session_id == ctx.session.id
            with open(CALLS, "a") as out:
                out.write(json.dumps([name, event["index"], event["type"]]) + "\\n")

        return handler

{extra}
    {variable} = {definer}({keyword}={events})
"""


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


def recorded(calls: Path) -> list[list[object]]:
    if not calls.exists():
        return []
    return [json.loads(line) for line in calls.read_text().splitlines()]


def hook(calls: Path, events: str, extra: str = "") -> str:
    return RECORDER.format(
        definer="define_hook", calls=str(calls), extra=extra, variable="hook", keyword="events", events=events
    )


def channel(calls: Path, events: str) -> str:
    return RECORDER.format(
        definer="define_channel", calls=str(calls), extra="", variable="channel", keyword="events", events=events
    )


@pytest.fixture
def agent_tree(tmp_path: Path, settings):
    """``make(files)``: an agent folder ``relay`` under a fresh AGENTS_DIR, and its row."""
    root = tmp_path / "agents"
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": root}

    def make(files: dict[str, str], slug: str = "relay"):
        write_tree(root / slug, {**INSTRUCTIONS, **files})
        return get_agent(slug)

    return make


def append_messages(session: Session, count: int) -> None:
    append_events(session.id, [NewEvent(EventType.MESSAGE_APPENDED, {"n": n}) for n in range(count)])


def cursor(session: Session) -> int:
    session.refresh_from_db(fields=["dispatched_index"])
    return session.dispatched_index


def test_events_reach_a_hook_in_index_order(agent_tree, calls, alice):
    session = SessionFactory(
        principal=alice, agent=agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": record("audit")}')})
    )
    append_event(session.id, EventType.SESSION_STARTED)
    append_event(session.id, EventType.MESSAGE_RECEIVED, {"text": "hi"})
    append_messages(session, 3)

    assert dispatch_pending(session.id) == 5
    assert recorded(calls) == [
        ["audit", 0, "session.started"],
        ["audit", 1, "message.received"],
        ["audit", 2, "message.appended"],
        ["audit", 3, "message.appended"],
        ["audit", 4, "message.appended"],
    ]
    assert cursor(session) == 4


def test_a_star_hook_gets_every_event_and_a_typed_hook_only_its_types(agent_tree, calls, alice):
    agent = agent_tree(
        {
            "agent/hooks/all.py": hook(calls, '{"*": record("all")}'),
            # A handler for the type wins over the same hook's "*": one call per hook and event.
            "agent/hooks/turns.py": hook(calls, '{"turn.completed": record("turns"), "*": record("turns-other")}'),
            "agent/hooks/usage.py": hook(calls, '{"turn.completed": record("usage")}'),
        }
    )
    session = SessionFactory(principal=alice, agent=agent)
    append_event(session.id, EventType.TURN_STARTED)
    append_event(session.id, EventType.TURN_COMPLETED, {"usage": {}})

    dispatch_pending(session.id)

    assert recorded(calls) == [
        ["all", 0, "turn.started"],
        ["turns-other", 0, "turn.started"],
        ["all", 1, "turn.completed"],
        ["turns", 1, "turn.completed"],
        ["usage", 1, "turn.completed"],
    ]


def test_the_session_channels_handlers_run_before_the_hooks(agent_tree, calls, alice):
    agent = agent_tree(
        {
            "agent/channels/web.py": channel(calls, '{"*": record("channel:web")}'),
            "agent/channels/slack.py": channel(calls, '{"*": record("channel:slack")}'),
            "agent/hooks/audit.py": hook(calls, '{"*": record("audit")}'),
        }
    )
    on_web = SessionFactory(principal=alice, agent=agent, channel="web")
    on_http = SessionFactory(principal=alice, agent=agent)
    append_messages(on_web, 2)
    append_messages(on_http, 1)

    dispatch_pending(on_web.id)
    dispatch_pending(on_http.id)

    assert recorded(calls) == [
        ["channel:web", 0, "message.appended"],
        ["audit", 0, "message.appended"],
        ["channel:web", 1, "message.appended"],
        ["audit", 1, "message.appended"],
        ["audit", 0, "message.appended"],  # the http session: no channel handlers, the hook only
    ]


def test_a_raising_hook_is_logged_and_the_next_hook_still_runs(agent_tree, calls, alice, mallory, client_for):
    broken = """
    def boom(event, ctx):
        raise RuntimeError("the audit service is down")
    """
    agent = agent_tree(
        {
            "agent/hooks/a_broken.py": hook(calls, '{"message.received": boom}', extra=broken),
            "agent/hooks/b_audit.py": hook(calls, '{"*": record("audit")}'),
        }
    )
    session = SessionFactory(principal=alice, agent=agent)
    append_event(session.id, EventType.MESSAGE_RECEIVED, {"text": "hi"})
    append_event(session.id, EventType.MESSAGE_RECEIVED, {"text": "again"})

    assert dispatch_pending(session.id) == 2
    assert recorded(calls) == [["audit", 0, "message.received"], ["audit", 1, "message.received"]]

    lines = client_for(alice).get("/relay/v1/logs").json()["lines"]
    failures = [line for line in lines if line["logger"] == "agent_platform.hooks"]
    assert len(failures) == 2
    assert failures[0]["level"] == "ERROR" and failures[0]["sessionId"] == session.id
    assert "hook 'a_broken' failed on message.received #0" in failures[0]["message"]
    assert "RuntimeError: the audit service is down" in failures[0]["message"]  # with its traceback
    assert LogLine.objects.filter(logger="agent_platform.hooks", tenant=alice.tenant, agent_slug="relay").count() == 2
    # Another tenant using the same shared agent does not see them.
    assert client_for(mallory).get("/relay/v1/logs").json()["lines"] == []


# Transactional: host APIs run through database_sync_to_async, which may close this thread's
# connection between calls (fine for autocommitted work, fatal to a test transaction).
@pytest.mark.django_db(transaction=True)
def test_async_handlers_run_to_completion(agent_tree, calls, alice):
    asynchronous = """
    import asyncio


    async def remember(event, ctx):
        await asyncio.sleep(0)
        await ctx.host.kv.put("last-index", event["index"])
        record("async")(event, ctx)
    """
    agent = agent_tree({"agent/hooks/remember.py": hook(calls, '{"*": remember}', extra=asynchronous)})
    session = SessionFactory(principal=alice, agent=agent)
    append_messages(session, 2)

    assert dispatch_pending(session.id) == 2
    assert recorded(calls) == [["async", 0, "message.appended"], ["async", 1, "message.appended"]]
    assert KVEntry.objects.get(agent=agent, tenant=alice.tenant, key="last-index").value == 1


def test_dispatching_again_replays_nothing(agent_tree, calls, alice):
    session = SessionFactory(
        principal=alice, agent=agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": record("audit")}')})
    )
    append_messages(session, 3)
    assert dispatch_pending(session.id) == 3

    assert dispatch_pending(session.id) == 0
    append_event(session.id, EventType.SESSION_WAITING)
    assert dispatch_pending(session.id) == 1
    assert [index for _, index, _ in recorded(calls)] == [0, 1, 2, 3]


def test_a_crash_mid_batch_never_replays_an_event(agent_tree, calls, alice):
    """A worker dying inside a handler (SystemExit stands in for the kill) loses the
    rest of its claimed batch, and a restarted dispatcher delivers nothing twice."""
    crash = """
    def crash(event, ctx):
        if event["index"] == 1:
            raise SystemExit("worker killed")
    """
    agent = agent_tree(
        {
            "agent/hooks/a_audit.py": hook(calls, '{"*": record("audit")}'),
            "agent/hooks/b_crash.py": hook(calls, '{"*": crash}', extra=crash),
        }
    )
    session = SessionFactory(principal=alice, agent=agent)
    append_messages(session, BATCH_SIZE + 2)

    with pytest.raises(SystemExit):
        dispatch_pending(session.id)
    assert [index for _, index, _ in recorded(calls)] == [0, 1]
    assert cursor(session) == BATCH_SIZE - 1  # the whole batch was claimed before any handler ran

    dispatch_pending(session.id)  # the "restarted" worker
    assert [index for _, index, _ in recorded(calls)] == [0, 1, BATCH_SIZE, BATCH_SIZE + 1]


def test_an_agent_that_subscribes_to_nothing_only_moves_the_cursor(agent_tree, alice):
    session = SessionFactory(principal=alice, agent=agent_tree({}))
    append_messages(session, 4)

    assert dispatch_pending(session.id) == 0
    assert cursor(session) == 3


def test_an_unknown_session_dispatches_nothing():
    assert dispatch_pending("ses_nothing") == 0


@pytest.fixture
def eager_tasks():
    """Tasks sent through the platform's app run at once in this thread (no broker)."""
    platform_app.conf.task_always_eager = True
    yield
    platform_app.conf.task_always_eager = False


def test_the_sweep_catches_up_on_sessions_whose_trigger_was_lost(agent_tree, calls, alice, eager_tasks):
    agent = agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": record("audit")}')})
    quiet = agent_tree({}, slug="quiet")
    behind = SessionFactory(principal=alice, agent=agent)
    behind_quiet = SessionFactory(principal=alice, agent=quiet)
    append_messages(behind, 2)
    append_messages(behind_quiet, 3)

    assert sweep_undispatched(min_age=timedelta(minutes=1)) == 0  # too recent: the trigger may be on its way
    assert sweep_undispatched(min_age=timedelta(0)) == 2
    assert [index for _, index, _ in recorded(calls)] == [0, 1]
    assert cursor(behind) == 1
    assert cursor(behind_quiet) == 2  # nothing to hand out: the cursor just moves
    assert sweep_undispatched(min_age=timedelta(0)) == 0


def _in_thread(target, errors: list[BaseException]):
    def run() -> None:
        try:
            target()
        except BaseException as error:  # surfaced by the test
            errors.append(error)
        finally:
            connections.close_all()

    return threading.Thread(target=run)


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent dispatchers are checked on Postgres (set DATABASE_URL)")


SLOW_RECORDER = """
    import time


    def slow(event, ctx):
        time.sleep(0.002)
        record("audit")(event, ctx)
"""


@pytest.mark.django_db(transaction=True)
def test_racing_dispatchers_hand_each_event_to_a_hook_once_and_in_order(agent_tree, calls, alice, postgres_only):
    agent = agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": slow}', extra=SLOW_RECORDER)})
    session = SessionFactory(principal=alice, agent=agent)
    append_messages(session, 60)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def dispatcher() -> None:
        start.wait()
        for _ in range(3):
            dispatch_pending(session.id)

    threads = [_in_thread(dispatcher, errors) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert [index for _, index, _ in recorded(calls)] == list(range(60))


@pytest.mark.django_db(transaction=True)
def test_dispatchers_racing_appenders_miss_nothing_and_repeat_nothing(agent_tree, calls, alice, postgres_only):
    agent = agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": slow}', extra=SLOW_RECORDER)})
    session = SessionFactory(principal=alice, agent=agent)
    errors: list[BaseException] = []
    appending = threading.Event()
    appending.set()

    def appender() -> None:
        try:
            for _ in range(40):
                append_messages(session, 2)
        finally:
            appending.clear()

    def dispatcher() -> None:
        while appending.is_set():
            dispatch_pending(session.id)
        dispatch_pending(session.id)

    threads = [_in_thread(appender, errors)] + [_in_thread(dispatcher, errors) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    dispatch_pending(session.id)
    assert [index for _, index, _ in recorded(calls)] == list(range(80))


def wait_for(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_requests_coalesces_into_few_tasks_and_misses_no_event(agent_tree, calls, alice, postgres_only):
    """Through a real (embedded) Celery worker: leading and trailing tasks only."""
    agent = agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": record("audit")}')})
    session = SessionFactory(principal=alice, agent=agent)
    runs: list[str] = []

    def count(sender=None, args=None, **_) -> None:
        if (
            sender is not None
            and sender.name == "sessions_app.tasks.dispatch_events"
            and list(args or []) == [session.id]
        ):
            runs.append(session.id)

    app = create_app("dispatch-test")
    app.conf.broker_url = "memory://localhost/"
    app.conf.beat_schedule = {}
    services = EmbeddedServices(app, threads=2)
    services.start()
    task_prerun.connect(count, weak=False)
    app.set_current()  # request_dispatch sends through the current app: this in-memory one
    try:
        for _ in range(20):
            append_messages(session, 1)
            request_dispatch(session.id)
        assert wait_for(lambda: len(recorded(calls)) >= 20)
        time.sleep(0.5)  # nothing more arrives
    finally:
        platform_app.set_current()
        task_prerun.disconnect(count)
        services.stop()
    assert [index for _, index, _ in recorded(calls)] == list(range(20))
    assert 1 <= len(runs) <= 4, runs


def test_request_dispatch_sends_nothing_for_an_agent_that_subscribes_to_nothing(
    agent_tree, calls, alice, eager_tasks, django_capture_on_commit_callbacks
):
    runs: list[object] = []

    def count(sender=None, **_) -> None:
        runs.append(sender)

    quiet = SessionFactory(principal=alice, agent=agent_tree({}, slug="quiet"))
    busy = SessionFactory(
        principal=alice, agent=agent_tree({"agent/hooks/audit.py": hook(calls, '{"*": record("audit")}')})
    )
    append_messages(quiet, 1)
    append_messages(busy, 1)
    task_prerun.connect(count, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            request_dispatch(quiet.id)
            request_dispatch(busy.id)
    finally:
        task_prerun.disconnect(count)
    assert len(callbacks) == 2  # both waited for the commit
    assert len(runs) == 1  # only the agent with a hook got a task
    assert recorded(calls) == [["audit", 0, "message.appended"]]


def test_a_sessions_trigger_reads_the_database_once(
    agent_tree, calls, alice, eager_tasks, django_capture_on_commit_callbacks, django_assert_num_queries
):
    """Every turn's end triggers a dispatch, and in a shared process some agent always
    subscribes to ``turn.completed``: deciding that a session's agent does not want it
    looks the session up once, not at every turn."""
    surface_for(agent_tree({"agent/hooks/audit.py": hook(calls, '{"turn.completed": record("audit")}')}))
    quiet = SessionFactory(principal=alice, agent=agent_tree({}, slug="quiet"))
    with django_capture_on_commit_callbacks(execute=True):
        request_dispatch(quiet.id, {EventType.TURN_COMPLETED})
    with django_assert_num_queries(0), django_capture_on_commit_callbacks(execute=True) as callbacks:
        request_dispatch(quiet.id, {EventType.TURN_COMPLETED})
    assert len(callbacks) == 1
    # A worker that claimed a turn has the session in hand: its turn's end reads nothing.
    claimed = SessionFactory(principal=alice, agent=quiet.agent)
    remember_session(Session.objects.select_related("agent").get(pk=claimed.pk))
    with django_assert_num_queries(0), django_capture_on_commit_callbacks(execute=True):
        request_dispatch(claimed.id, {EventType.TURN_COMPLETED})
    assert recorded(calls) == []


def test_an_agent_discovered_later_gets_the_events_it_subscribes_to(
    agent_tree, calls, alice, eager_tasks, django_capture_on_commit_callbacks, monkeypatch
):
    """What the process's agents subscribe to is worked out once, not at every append; an
    agent discovered after that still gets its events."""
    monkeypatch.setattr(registry, "_surfaces", {})  # this process has discovered nothing yet
    monkeypatch.setattr(registry, "_subscribed", None)
    quiet = SessionFactory(principal=alice, agent=agent_tree({}, slug="quiet"))
    surface_for(quiet.agent)
    with django_capture_on_commit_callbacks(execute=True):
        append_messages(quiet, 1)
    assert registry.subscribed_event_types() == frozenset()
    audited = SessionFactory(
        principal=alice,
        agent=agent_tree({"agent/hooks/audit.py": hook(calls, '{"message.appended": record("audit")}')}),
    )
    surface_for(audited.agent)
    with django_capture_on_commit_callbacks(execute=True):
        append_messages(audited, 1)
    assert recorded(calls) == [["audit", 0, "message.appended"]]
