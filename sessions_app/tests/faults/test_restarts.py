"""Rows 4 and 5: Redis and Postgres restarted under a live platform.

These run against servers of their own (``servers.py``): a throwaway Postgres
cluster holding a copy of the test database and a Redis without persistence,
with daphne, the worker and beat pointed at them. Nothing accepted is lost,
every turn ends once, streams resume without gaps, the API answers 503 JSON
(never 500) while the database is down, and everything works again after. The
worker outlives its broker: Redis killed ten times in a row under load, with the
pool the worker runs by default (threads) and with prefork; a WebSocket opened
while Redis is down is closed 4503 (try again later), never an HTTP 500.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from bench.harness import Processes
from sessions_app.tests.faults.invariants import assert_log_invariants
from sessions_app.tests.faults.servers import PG_BIN, OwnPostgres, OwnRedis
from sessions_app.tests.faults.stack import PYTHON, ROOT, Client, Stack, raw_get, records, wait_until
from sessions_app.tests.faults.wsclient import HandshakeRefused, WebSocket

# The platform runs on its own servers; the test database is only copied from (it must exist).
pytestmark = [pytest.mark.fault, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
OUTAGE_SECONDS = 2.0  # how long a server stays down
# What daphne logs when an exception escapes the application (and answers 500).
UNCAUGHT = "Exception inside application"
TOKEN_SCRIPT = """
from agent_platform.models import ApiToken, Principal, Tenant
principal = Principal.objects.create(tenant=Tenant.objects.create(slug="isolated"), name="ivy")
print(ApiToken.issue(principal, "fault")[1])
"""


@dataclass
class Isolated:
    stack: Stack
    postgres: OwnPostgres
    redis: OwnRedis
    token: str

    def client(self) -> Client:
        return self.stack.client(self.token)

    def check(self) -> dict[str, Any]:
        with psycopg.connect(self.postgres.dsn) as conn, conn.cursor() as cursor:
            return assert_log_invariants(None, cursor)

    def status_codes(self) -> list[int]:
        """Every status daphne answered so far (its access log)."""
        return [int(code) for code in re.findall(r'" (\d{3}) ', self.daphne_log())]

    def daphne_log(self) -> str:
        return self.stack.web.log_path.read_text(errors="replace") if self.stack.web else ""


@pytest.fixture(scope="module")
def isolated(test_database_url, live_agents_dir, tmp_path_factory):
    if not (shutil.which("redis-server") and shutil.which("psql") and (PG_BIN / "initdb").exists()):
        pytest.skip("needs redis-server, psql and the Postgres 15 server binaries")
    work = tmp_path_factory.mktemp("isolated")
    postgres = OwnPostgres()
    stack: Stack | None = None
    redis = OwnRedis(Processes(work))
    try:
        postgres.start()
        postgres.load_copy_of(test_database_url)
        redis.start()
        env = {**os.environ, "DATABASE_URL": postgres.url, "REDIS_URL": redis.url}
        made = subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", TOKEN_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip().splitlines()[-1]
        stack = Stack.start(work / "stack", postgres.url, redis.url, live_agents_dir)
        yield Isolated(stack, postgres, redis, token)
    finally:
        if stack is not None:
            stack.stop()
        redis.processes.stop_all()
        postgres.remove()


@pytest.fixture
def servers(isolated):
    """The isolated platform, all servers up before the test and checked after it."""
    if not isolated.postgres.running():
        isolated.postgres.start()
    if not isolated.redis.ping():
        isolated.redis.start()
    isolated.stack.ensure_running()
    yield isolated
    isolated.stack.close_clients()
    assert 500 not in isolated.status_codes(), "daphne answered 500"
    assert UNCAUGHT not in isolated.daphne_log(), "an exception escaped the application"
    isolated.check()


class ResumingReader(threading.Thread):
    """A client that reads a session's stream and, whenever the stream breaks (or is
    refused), reconnects from the index after the last record it saw, until ``stop``."""

    def __init__(self, servers: Isolated, session: str, transport: str) -> None:
        super().__init__(daemon=True)
        self.servers, self.session, self.transport = servers, session, transport
        self.seen: list[dict[str, Any]] = []
        self.out_of_order: list[tuple[int, int]] = []
        self.reconnects = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for record in self._records(len(self.seen)):
                    if record["index"] != len(self.seen):
                        self.out_of_order.append((record["index"], len(self.seen)))
                        return
                    self.seen.append(record)
                    if self.stop.is_set():
                        return
            except (OSError, ValueError, http.client.HTTPException, HandshakeRefused):
                pass  # the stream broke: resume from the next index
            self.reconnects += 1
            self.stop.wait(0.2)

    def _records(self, start: int) -> Any:
        port, token = self.servers.stack.port, self.servers.token
        if self.transport == "ws":
            socket = WebSocket(port, f"/ws/faults/session/{self.session}?startIndex={start}", token, timeout=2)
            try:
                yield from socket.records()
            finally:
                socket.close()
            return
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            path = f"/faults/v1/session/{self.session}/stream?startIndex={start}"
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            if response.status != 200:
                raise OSError(f"stream refused: {response.status}")
            while line := response.readline():
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


@pytest.mark.parametrize("stop", ["sigkill", "shutdown-nosave"])
def test_a_redis_restart_loses_no_accepted_turn_and_streams_resume_without_gaps(servers, stop):
    client = servers.client()
    running = client.start('/call effect {"key": "across", "hold": 3}')
    client.wait_for(running["sessionId"], "actions.requested")
    readers = [ResumingReader(servers, running["sessionId"], transport) for transport in ("ndjson", "ws")]
    for reader in readers:
        reader.start()

    # No persistence either way: the broker's queue and the channel layer are gone.
    servers.redis.kill() if stop == "sigkill" else servers.redis.shutdown_nosave()
    during = client.start("sent while redis is down")  # accepted: the turn is in the database
    assert client.call("GET", f"/faults/v1/session/{running['sessionId']}")[0] == 200
    time.sleep(OUTAGE_SECONDS)  # the outage lasts a while
    servers.redis.start()

    after = client.start("sent after the restart")
    # The worker consumes again (no silent stall after a broker restart: celery#9054, #10205).
    assert client.wait_turn_ended(after["sessionId"], after["turnId"], timeout=30)["type"] == "turn.completed"
    for started in (running, during):
        end = client.wait_turn_ended(started["sessionId"], started["turnId"], timeout=60)
        assert end["type"] == "turn.completed", end
    log = client.wait_for(running["sessionId"], "session.waiting")
    wait_until(lambda: all(len(r.seen) >= len(log) for r in readers), 30, "the streams to catch up")
    for reader in readers:
        reader.stop.set()
        reader.join(timeout=10)
        assert not reader.out_of_order, (reader.transport, reader.out_of_order)
        assert reader.seen[: len(log)] == log, reader.transport
    client.assert_usable(running["sessionId"])


def test_a_postgres_crash_answers_503_while_down_and_loses_nothing_committed(servers):
    client = servers.client()
    started = client.start('/call effect {"key": "across", "hold": 2}')
    session = started["sessionId"]
    client.wait_for(session, "actions.requested")
    before = client.events(session)

    servers.postgres.stop("immediate")  # a crash: connections cut, no checkpoint
    try:
        for method, path, body in [
            ("GET", f"/faults/v1/session/{session}", None),
            ("GET", f"/faults/v1/session/{session}/events", None),
            ("POST", "/faults/v1/session", {"message": "hello"}),
            ("POST", f"/faults/v1/session/{session}", {"message": "more"}),
        ]:
            status, answer = client.call(method, path, body)
            assert (status, answer["error"]) == (503, "unavailable"), (method, path, status, answer)
        status, kind, _ = raw_get(servers.stack.port, f"/faults/v1/session/{session}/stream", servers.token)
        assert (status, kind) == (503, "application/json")
        time.sleep(OUTAGE_SECONDS)  # the outage lasts a while
    finally:
        servers.postgres.start()

    end = client.wait_turn_ended(session, started["turnId"], timeout=60)
    assert end["type"] in ("turn.completed", "turn.failed"), end
    events = client.events(session)
    assert events[: len(before)] == before  # nothing committed was lost or changed
    client.assert_usable(session)


def test_app_connections_cut_mid_turn_are_retried_and_the_turn_ends_once(servers):
    client = servers.client()
    message = "\n".join(f'/call effect {{"key": "k{n}", "hold": 0.2}}' for n in range(6))
    started = client.start(message)
    session = started["sessionId"]
    client.wait_for(session, "action.result")
    before = client.events(session)

    cut = 0
    with psycopg.connect(servers.postgres.dsn, autocommit=True) as admin:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchall()
            cut += len(rows)
            time.sleep(0.02)
    assert cut > 0

    end = client.wait_turn_ended(session, started["turnId"], timeout=60)
    assert end["type"] in ("turn.completed", "turn.failed"), end
    assert client.events(session)[: len(before)] == before
    client.assert_usable(session)


class Load(threading.Thread):
    """A user's program submitting a turn over HTTP every ``gap`` seconds until ``stop``;
    keeps the answers (every one must be 201, whether Redis is up or not)."""

    def __init__(self, servers: Isolated, gap: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.client, self.gap = servers.client(), gap
        self.accepted: list[dict[str, Any]] = []
        self.refused: list[tuple[int, Any]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            # A short tool call: some turns are always running when Redis dies.
            message = f'/call effect {{"key": "load-{n}", "hold": 0.5}}'
            try:
                status, answer = self.client.call("POST", "/faults/v1/session", {"message": message})
            except (OSError, http.client.HTTPException) as failed:
                status, answer = 0, repr(failed)
            if status == 201:
                self.accepted.append(answer)
            else:
                self.refused.append((status, answer))
            n += 1
            self.stop.wait(self.gap)


UP_SECONDS = 1.0  # how long Redis runs between two kills
DOWN_SECONDS = 1.0


# Ten in a row on the default pool; the transport is the same under prefork, whose
# run checks the pool's own reconnects with fewer (each restart costs seconds).
@pytest.mark.parametrize(("pool", "concurrency", "restarts"), [("threads", 100, 10), ("prefork", 2, 4)])
def test_the_worker_outlives_ten_redis_kills_under_load(servers, pool, concurrency, restarts):
    """celery 5.7 / kombu 5.7 ended the worker on some Redis restarts with
    ``Unrecoverable error: AttributeError("'NoneType' object has no attribute
    'hostname'")`` (see ``agent_platform.celery.guard_orphaned_redis_channels``)."""
    stack = servers.stack
    stack.use_worker(pool, concurrency)  # as ``celery -A agent_platform worker --pool=... --concurrency=...``
    try:
        worker, beat, web = stack.worker, stack.beat, stack.web
        assert worker is not None and beat is not None and web is not None
        client = servers.client()
        load = Load(servers)
        load.start()
        try:
            for restart in range(restarts):
                time.sleep(UP_SECONDS)
                servers.redis.kill()
                time.sleep(DOWN_SECONDS)
                servers.redis.start()
                # Still alive and consuming: a turn submitted now completes.
                probe = client.start(f"after restart {restart}")
                try:
                    end = client.wait_turn_ended(probe["sessionId"], probe["turnId"], timeout=30)
                except AssertionError as stalled:
                    fatal = [line for line in worker.log_tail(10_000).splitlines() if "Unrecoverable" in line]
                    raise AssertionError(f"restart {restart}: no turn ends: {fatal or worker.log_tail()}") from stalled
                assert end["type"] == "turn.completed", (restart, end)
                assert [p.popen.poll() for p in (worker, beat, web)] == [None] * 3, (restart, worker.log_tail())
        finally:
            load.stop.set()
            load.join(timeout=30)
        assert not load.refused, load.refused[:3]
        assert stack.worker is worker  # the same process all along: nobody restarted it
        for started in load.accepted:
            end = client.wait_turn_ended(started["sessionId"], started["turnId"], timeout=60)
            assert end["type"] in ("turn.completed", "turn.failed"), end
        assert "Unrecoverable error" not in worker.log_path.read_text(errors="replace")
    finally:
        stack.use_worker()  # back to the default


def test_while_redis_is_down_a_websocket_is_closed_4503_and_reading_and_creating_still_work(servers):
    client, port, token = servers.client(), servers.stack.port, servers.token
    done = client.start("hello", mode="task")
    session = done["sessionId"]
    log = client.wait_for(session, "session.completed")
    path = f"/ws/faults/session/{session}?startIndex=0"

    servers.redis.kill()
    try:
        socket = WebSocket(port, path, token)  # the handshake succeeds: no HTTP 500
        try:
            assert (list(socket.records()), socket.close_code) == ([], 4503)
        finally:
            socket.close()
        # Reading the log needs no Redis: the NDJSON stream polls the table.
        status, kind, body = raw_get(port, f"/faults/v1/session/{session}/stream", token)
        assert (status, kind, records(body)) == (200, "application/x-ndjson", log)
        # A new session is accepted; its turn waits in the database for the sweeper.
        during = client.start("sent while redis is down")
        time.sleep(OUTAGE_SECONDS)
    finally:
        servers.redis.start()

    assert client.wait_turn_ended(during["sessionId"], during["turnId"], timeout=30)["type"] == "turn.completed"
    socket = WebSocket(port, path, token)  # once Redis is back, a new connection streams as usual
    try:
        assert (list(socket.records()), socket.close_code) == (log, 1000)
    finally:
        socket.close()
