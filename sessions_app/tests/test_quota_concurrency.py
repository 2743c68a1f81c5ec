"""RELIABILITY 17: a tenant's cap on running turns holds under 50 concurrent requests
(sampled from the database throughout, never above the cap), the excess is 429 with
``Retry-After``, and another tenant meanwhile is never refused and its turns complete.
And ``max_running_turns`` of a shared agent is counted per tenant."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from rest_framework.test import APIClient

from agent_platform.models import Tenant
from agent_platform.tests.factories import issue_token
from sessions_app.models import ACTIVE_TURNS, KVEntry, Turn, TurnStatus
from sessions_app.quotas import active_turns
from sessions_app.tests.live import types

pytestmark = pytest.mark.django_db(transaction=True)

CAP = 3
BURST = 50
HOLD = '/call wait {"seconds": 30}'  # admitted turns stay running until the test stops them


def closing_connections(work):
    """``work`` run on a pool thread, which gives its database connection back after."""

    def run(*args):
        try:
            return work(*args)
        finally:
            connections.close_all()

    return run


def test_running_turns_cap_holds_under_50_concurrent_requests_and_spares_the_other_tenant(live, alice, mallory):
    Tenant.objects.filter(pk=alice.tenant_id).update(max_running_turns=CAP)
    tokens = {alice.pk: issue_token(alice), mallory.pk: issue_token(mallory)}

    def start(principal, message):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens[principal.pk]}")
        return client.post("/lab/v1/session", {"message": message}, format="json")

    samples: list[tuple[int, int]] = []
    done = threading.Event()

    @closing_connections
    def sample():
        turns = Turn.objects.filter(session__tenant_id=alice.tenant_id)
        while not done.is_set():
            samples.append((turns.filter(status=TurnStatus.RUNNING).count(), active_turns(alice.tenant_id)))

    with ThreadPoolExecutor(max_workers=16) as pool:
        sampler = pool.submit(sample)
        burst = [pool.submit(closing_connections(start), alice, HOLD) for _ in range(BURST)]
        theirs = [pool.submit(closing_connections(start), mallory, f"hello {n}") for n in range(3)]
        answers = [future.result() for future in burst]
        their_answers = [future.result() for future in theirs]
        other = live(mallory)
        for answer in their_answers:
            assert answer.status_code == 201, answer.content
            events = other.wait_for(answer.json()["sessionId"], "session.waiting")
            assert "turn.completed" in types(events) and "turn.queued" not in types(events)
        mine = live(alice)
        admitted = [a.json()["sessionId"] for a in answers if a.status_code == 201]
        for session_id in admitted:
            mine.wait_for(session_id, "actions.requested")
        done.set()
        sampler.result()

    refused = [a for a in answers if a.status_code != 201]
    assert len(admitted) == CAP and len(refused) == BURST - CAP
    for answer in refused:
        assert answer.status_code == 429 and answer.json()["error"] == "quota_exceeded"
        assert int(answer["Retry-After"]) >= 1
    assert samples and max(running for running, _ in samples) <= CAP
    assert max(unended for _, unended in samples) <= CAP
    for session_id in admitted:
        assert mine.client.post(f"/lab/v1/session/{session_id}/stop").status_code in (200, 202)
    for session_id in admitted:
        mine.wait_for(session_id, "session.waiting")
    assert not Turn.objects.filter(session__tenant_id=alice.tenant_id, status__in=ACTIVE_TURNS).exists()


def test_a_shared_agents_max_running_turns_is_counted_per_tenant(live, alice, mallory):
    # capped: max_running_turns=1. Alice's turn holds it; Mallory's runs beside it anyway.
    mine, theirs = live(alice, slug="capped"), live(mallory, slug="capped")
    holding = mine.start(HOLD)["sessionId"]
    mine.wait_for(holding, "actions.requested")
    other = theirs.start("hello")["sessionId"]
    events = theirs.wait_for(other, "session.waiting", timeout=10)
    assert "turn.queued" not in types(events)
    assert Turn.objects.filter(session_id=holding, status=TurnStatus.RUNNING).exists()
    # Within one tenant the cap still holds.
    second = mine.start("me too")["sessionId"]
    mine.wait_for(second, "turn.queued")
    assert mine.client.post(f"/capped/v1/session/{holding}/stop").status_code in (200, 202)
    mine.wait_for(second, "session.waiting")


def test_a_key_value_write_past_the_stored_bytes_cap_fails_the_tool_call(live, alice):
    Tenant.objects.filter(pk=alice.tenant_id).update(max_stored_bytes=100)
    client = live(alice)
    small = client.start('/call remember {"key": "a", "value": "short"}')["sessionId"]
    kept = client.wait_for(small, "session.waiting")
    assert [e["data"].get("isError") for e in kept if e["type"] == "action.result"] == [False]
    big = "x" * 200
    session = client.start(f'/call remember {{"key": "b", "value": "{big}"}}')["sessionId"]
    events = client.wait_for(session, "session.waiting")
    [result] = [e["data"] for e in events if e["type"] == "action.result"]
    assert result["isError"] and "stores" in str(result)
    assert KVEntry.objects.filter(tenant_id=alice.tenant_id, key="b").count() == 0
