"""``ctx.host.kv`` and ``ctx.host.files`` as a tool uses them, on the real database."""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import async_to_sync
from django.db import connections

from agents.runtime.fs.base import NotFoundError, WriteFailedError
from sessions_app.host import host_for
from sessions_app.tests.factories import AgentFactory, SessionFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent():
    return AgentFactory(slug="weather")


def run(coroutine):
    """Await from this (sync) test, so the ORM calls share the test's connection."""

    async def wait():
        return await coroutine

    return async_to_sync(wait)()


def test_kv_round_trips_json_and_lists_by_prefix(alice, agent):
    kv = host_for(SessionFactory(principal=alice, agent=agent)).kv

    async def scenario():
        await kv.put("city:lyon", {"visits": 2})
        await kv.put("city:oslo", [1, 2])
        await kv.put("other", None)
        assert await kv.get("city:lyon") == {"visits": 2}
        assert await kv.get("missing", "fallback") == "fallback"
        assert await kv.list("city:") == ["city:lyon", "city:oslo"]
        await kv.delete("city:lyon")
        return await kv.list()

    assert run(scenario()) == ["city:oslo", "other"]


def test_kv_refuses_a_value_that_is_not_json(alice, agent):
    kv = host_for(SessionFactory(principal=alice, agent=agent)).kv
    with pytest.raises(ValueError, match="not JSON"):
        run(kv.put("when", object()))


def test_kv_is_shared_by_an_agents_sessions_but_not_across_tenants(alice, bob, mallory, agent):
    ours = host_for(SessionFactory(principal=alice, agent=agent)).kv
    colleague = host_for(SessionFactory(principal=bob, agent=agent)).kv
    stranger = host_for(SessionFactory(principal=mallory, agent=agent)).kv
    run(ours.put("secret", "acme only"))
    assert run(colleague.get("secret")) == "acme only"
    assert run(stranger.get("secret")) is None
    assert run(stranger.list()) == []


def test_files_default_to_the_session_and_deployment_files_are_agent_wide(alice, agent):
    first = host_for(SessionFactory(principal=alice, agent=agent)).files
    second = host_for(SessionFactory(principal=alice, agent=agent)).files
    run(first.write("notes/a.txt", "mine"))
    run(first.write("/shared.txt", b"everyone", scope="deployment"))
    assert run(first.read("notes/a.txt"))[0] == b"mine"
    with pytest.raises(NotFoundError, match=r"not found: /notes/a\.txt"):
        run(second.read("notes/a.txt"))
    assert run(second.read("shared.txt", scope="deployment"))[0] == b"everyone"
    assert run(first.list("/notes")) == ["/notes/a.txt"]


def test_a_write_with_a_stale_etag_fails_and_keeps_the_newer_content(alice, agent):
    files = host_for(SessionFactory(principal=alice, agent=agent)).files
    etag = run(files.write("draft.md", "v1"))
    newer = run(files.write("draft.md", "v2", etag=etag))
    with pytest.raises(WriteFailedError, match=r"write failed: /draft\.md"):
        run(files.write("draft.md", "v3 from a stale reader", etag=etag))
    assert run(files.read("draft.md")) == (b"v2", newer)


def test_concurrent_compare_and_swap_lets_exactly_one_writer_win(alice, agent):
    session = SessionFactory(principal=alice, agent=agent)
    etag = run(host_for(session).files.write("counter", "0"))
    start = threading.Barrier(6)
    outcomes: list[object] = []

    def contender(n: int) -> None:
        files = host_for(session).files
        start.wait()
        try:
            outcomes.append(run(files.write("counter", f"writer {n}", etag=etag)))
        except WriteFailedError as failure:
            outcomes.append(failure)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(outcomes) == 6
    assert sum(isinstance(outcome, str) for outcome in outcomes) == 1
    winner = next(outcome for outcome in outcomes if isinstance(outcome, str))
    assert run(host_for(session).files.read("counter"))[1] == winner


def test_deleting_a_missing_file_says_not_found(alice, agent):
    files = host_for(SessionFactory(principal=alice, agent=agent)).files
    with pytest.raises(NotFoundError, match="not found: /nope"):
        run(files.delete("nope"))


def test_otel_calls_are_no_ops_without_an_exporter_but_still_check_attributes(alice, agent):
    otel = host_for(SessionFactory(principal=alice, agent=agent)).otel
    otel.increment("lookups", 1, {"city": "lyon"})
    otel.record("latency_ms", 12.5)
    otel.set_attributes({"lab.city": "lyon"})
    with pytest.raises(ValueError, match=r"'lab\.where'"):
        otel.set_attributes({"lab.where": {"nested": "dict"}})
    with pytest.raises(ValueError, match="not a metric name an agent may use"):
        otel.increment("cursor.token.usage", 10**6)  # the platform's own


def test_a_host_fs_root_reads_and_lists_the_stored_files(alice, agent):
    from agents.runtime.fs.host import HostFileSystem
    from agents.runtime.fs.tools import call_file_tool
    from sessions_app.host import DatabaseFileStore

    session = SessionFactory(principal=alice, agent=agent)
    run(host_for(session).files.write("/docs/a.md", "alpha\nbeta"))
    fs = HostFileSystem(DatabaseFileStore(session.tenant_id, agent.pk, session.pk))
    listing = run(call_file_tool(fs, "LS", {"path": "/docs"}))
    assert "a.md" in str(listing)
    assert "beta" in str(run(call_file_tool(fs, "Read", {"path": "/docs/a.md"})))
