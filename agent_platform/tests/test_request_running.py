"""A web process runs few requests at once, one tenant's at most its share of them,
tenants in turn (``PLATFORM_REQUEST_RUNNING``, ``agent_platform.handlers``), and a
request still running after ``PLATFORM_REQUEST_STEP_ASIDE_SECONDS`` gives its place back.

Driven over a real daphne: tenant A's request that waits (its turn's admission waits for
A's tenant row, which the test holds locked) holds A's one running place until it steps
aside; tenant B's request goes in beside it at once, and A's own next request waits for
the step-aside, not for the lock. A request that knows it waits for another (an
idempotent retry waiting for its first attempt's answer) gives its place back at once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection

from agent_platform import handlers
from agent_platform.tests.daphne import Daphne, database_url, serve
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, issue_token
from sessions_app.api.idempotency import PENDING, request_digest
from sessions_app.models import IdempotencyRecord

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

STEP_ASIDE = 1.0
START = "/weather/v1/session"
BODY = {"message": "hi"}


def _serve(live_agents_dir: Any, tmp_path_factory: Any, step_aside: float) -> Iterator[Daphne]:
    if connection.vendor != "postgresql":
        pytest.skip("daphne serves the Postgres test database")
    env = {
        "AGENTS_DIR": str(live_agents_dir),
        "PLATFORM_DEV": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PLATFORM_REQUEST_RUNNING": "2",  # the default: one tenant runs one request at a time
        "PLATFORM_REQUEST_STEP_ASIDE_SECONDS": str(step_aside),
    }
    yield from serve(tmp_path_factory, env)


@pytest.fixture
def server(live_agents_dir, tmp_path_factory, transactional_db) -> Iterator[Daphne]:
    yield from _serve(live_agents_dir, tmp_path_factory, STEP_ASIDE)


@pytest.fixture
def server_slow_to_step_aside(live_agents_dir, tmp_path_factory, transactional_db) -> Iterator[Daphne]:
    yield from _serve(live_agents_dir, tmp_path_factory, 60.0)


class Clients:
    """Requests of named principals, each with its own token; ``finished`` lists them in
    the order their answers came back."""

    def __init__(self, server: Daphne, **principals: Any) -> None:
        self.server = server
        self.tokens = {name: issue_token(principal) for name, principal in principals.items()}
        self.finished: list[str] = []
        self.lock = threading.Lock()
        for name in principals:
            # A token's first request looks it up (later ones know the tenant without the database).
            assert self.request(name, "GET", "/api/v1/me") == 200
        self.finished.clear()

    def request(self, who: str, method: str, path: str, **kwargs: Any) -> int:
        headers = {"Authorization": f"Bearer {self.tokens[who]}", **kwargs.pop("headers", {})}
        response = httpx.request(method, self.server.url + path, headers=headers, timeout=30, **kwargs)
        with self.lock:
            self.finished.append(f"{who} {method} {path}")
        return response.status_code


def test_another_tenants_request_goes_in_beside_a_waiting_one_and_the_tenants_own_waits_for_its_step_aside(
    server,
):
    alice = PrincipalFactory(tenant=TenantFactory(slug="acme"), name="alice")
    mallory = PrincipalFactory(tenant=TenantFactory(slug="umbrella"), name="mallory")
    clients = Clients(server, alice=alice, mallory=mallory)
    # Alice's next turn is admitted under her tenant's row lock: held here, her start waits.
    with psycopg.connect(database_url()) as locker, ThreadPoolExecutor(max_workers=3) as pool:
        locker.execute("SELECT 1 FROM agent_platform_tenant WHERE id = %s FOR UPDATE", [alice.tenant_id])
        waiting = pool.submit(clients.request, "alice", "POST", START, json=BODY)
        time.sleep(STEP_ASIDE / 3)  # it has its running place (well before it steps aside)
        alices_next = pool.submit(clients.request, "alice", "GET", "/api/v1/me")
        time.sleep(STEP_ASIDE / 10)  # after alice's, so that alice's would finish first if let in
        mallorys = pool.submit(clients.request, "mallory", "GET", "/api/v1/me")
        assert mallorys.result() == 200 and alices_next.result() == 200
        assert not waiting.done()
        locker.rollback()  # the lock goes: alice's session starts
        assert waiting.result() == 201

    assert clients.finished == [
        "mallory GET /api/v1/me",  # beside alice's waiting request, without waiting
        "alice GET /api/v1/me",  # once the waiting one stepped aside
        f"alice POST {START}",  # once the lock went
    ]


def test_an_idempotent_retry_waiting_for_its_first_attempt_gives_its_place_back_at_once(server_slow_to_step_aside):
    alice = PrincipalFactory(tenant=TenantFactory(slug="acme"), name="alice")
    clients = Clients(server_slow_to_step_aside, alice=alice)
    # A first attempt still being answered: a retry with its key waits for its answer.
    first = IdempotencyRecord.objects.create(
        principal=alice, key="held", request_hash=request_digest("POST", START, BODY), status_code=PENDING, response={}
    )
    with ThreadPoolExecutor(max_workers=2) as pool:
        retry = pool.submit(clients.request, "alice", "POST", START, json=BODY, headers={"Idempotency-Key": "held"})
        time.sleep(0.3)  # the retry is waiting
        # Alice's next request runs at once, not after the 60 s step-aside (or the retry's 10 s wait).
        assert pool.submit(clients.request, "alice", "GET", "/api/v1/me").result(timeout=5) == 200
        assert not retry.done()
        IdempotencyRecord.objects.filter(pk=first.pk).update(status_code=201, response={"sessionId": "s"})
        assert retry.result() == 201  # the first attempt's answer

    assert clients.finished == ["alice GET /api/v1/me", f"alice POST {START}"]


def test_requests_of_no_known_tenant_are_not_held_to_one_at_a_time_by_their_address(monkeypatch, settings):
    # Signed-in browsers behind a proxy all come from the proxy's address: they must not
    # run one at a time as if they were one tenant.
    settings.PLATFORM = {**settings.PLATFORM, "REQUEST_RUNNING": 2, "REQUEST_TENANT_SHARE": 0.5}
    monkeypatch.setattr(handlers, "_running_slots", None)

    async def entered_at_once(whose: Hashable) -> int:
        first, second = handlers.running_slot(whose), handlers.running_slot(whose)
        await first.__aenter__()
        try:
            await asyncio.wait_for(second.__aenter__(), 0.2)
        except TimeoutError:
            return 1
        await second.__aexit__(None, None, None)
        return 2  # the first is left held: each case makes slots of its own

    assert asyncio.run(entered_at_once(("address", "10.0.0.1"))) == 2
    monkeypatch.setattr(handlers, "_running_slots", None)
    assert asyncio.run(entered_at_once(handlers.tenant_key(1))) == 1  # a tenant's share: one at a time
