"""Per-tenant quotas and the monthly budget at the HTTP surface: new sessions per minute,
turns not yet ended, stored bytes, open streams, and the budget (``sessions_app.quotas``).
Each refusal is a 429 (storage: 413) ``{"error", "message"}`` with ``Retry-After``; the
other tenant is never refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agent_platform.models import Tenant
from sessions_app.models import Turn, TurnStatus
from sessions_app.tests.test_ndjson_stream import open_stream, session_with_events, token_for
from sessions_app.tests.test_websocket_stream import connect

START = "/weather/v1/session"


def set_quotas(principal, **fields) -> None:
    Tenant.objects.filter(pk=principal.tenant_id).update(**fields)


def assert_refused(response, status: int = 429, code: str = "quota_exceeded") -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == code and body["message"]
    assert int(response["Retry-After"]) >= 1


def test_new_sessions_past_the_per_minute_cap_are_429_with_retry_after(alice, mallory, client_for):
    set_quotas(alice, max_sessions_per_minute=2)
    client = client_for(alice)
    assert [client.post(START, {"message": "hi"}, format="json").status_code for _ in range(2)] == [201, 201]
    refused = client.post(START, {"message": "hi"}, format="json")
    assert_refused(refused)
    assert int(refused["Retry-After"]) <= 60
    assert client_for(mallory).post(START, {"message": "hi"}, format="json").status_code == 201


def test_turns_past_the_running_turns_cap_are_429_until_one_ends(alice, mallory, client_for):
    set_quotas(alice, max_running_turns=1)
    client = client_for(alice)
    first = client.post(START, {"message": "hi"}, format="json").json()
    assert_refused(client.post(START, {"message": "hi"}, format="json"))
    follow_up = client.post(f"{START}/{first['sessionId']}", {"message": "more", "admission": "enqueue"}, format="json")
    assert_refused(follow_up)
    assert client_for(mallory).post(START, {"message": "hi"}, format="json").status_code == 201
    Turn.objects.filter(pk=first["turnId"]).update(status=TurnStatus.COMPLETED, ended_at=timezone.now())
    assert client.post(START, {"message": "hi"}, format="json").status_code == 201


def test_a_budget_of_zero_refuses_every_new_turn(alice, mallory, client_for):
    set_quotas(alice, monthly_budget_usd=Decimal(0))
    assert_refused(client_for(alice).post(START, {"message": "hi"}, format="json"), code="budget_exhausted")
    assert client_for(mallory).post(START, {"message": "hi"}, format="json").status_code == 201


def test_a_spent_budget_refuses_new_turns_until_it_is_raised(alice, client_for):
    set_quotas(alice, monthly_budget_usd=Decimal("1.00"))
    client = client_for(alice)
    started = client.post(START, {"message": "hi"}, format="json").json()
    # What the worker records when the turn ends: its usage priced (agents.runtime.pricing).
    Turn.objects.filter(pk=started["turnId"]).update(
        status=TurnStatus.COMPLETED, ended_at=timezone.now(), cost=Decimal("0.60")
    )
    assert client.post(f"{START}/{started['sessionId']}", {"message": "more"}, format="json").status_code == 202
    Turn.objects.filter(session_id=started["sessionId"], status=TurnStatus.QUEUED).update(
        status=TurnStatus.COMPLETED, ended_at=timezone.now(), cost=Decimal("0.40")
    )
    refused = client.post(f"{START}/{started['sessionId']}", {"message": "more"}, format="json")
    assert_refused(refused, code="budget_exhausted")
    assert "1.00" in refused.json()["message"]
    assert_refused(client.post(START, {"message": "hi"}, format="json"), code="budget_exhausted")
    set_quotas(alice, monthly_budget_usd=Decimal("5"))
    assert client.post(START, {"message": "hi"}, format="json").status_code == 201


def test_last_months_spend_does_not_count(alice, client_for):
    set_quotas(alice, monthly_budget_usd=Decimal("1"))
    client = client_for(alice)
    started = client.post(START, {"message": "hi"}, format="json").json()
    long_ago = timezone.now().replace(day=1) - timezone.timedelta(days=3)
    Turn.objects.filter(pk=started["turnId"]).update(status=TurnStatus.COMPLETED, ended_at=long_ago, cost=Decimal(9))
    assert client.post(START, {"message": "hi"}, format="json").status_code == 201


def test_workspace_files_past_the_stored_bytes_cap_are_413(alice, mallory, client_for):
    set_quotas(alice, max_stored_bytes=1000)
    client = client_for(alice)
    kept = client.post(START, {"message": "hi", "workspaceFiles": {"a.txt": "x" * 600}}, format="json")
    assert kept.status_code == 201
    too_much = client.post(START, {"message": "hi", "workspaceFiles": {"b.txt": "y" * 600}}, format="json")
    assert_refused(too_much, status=413)
    assert "1000" in too_much.json()["message"]
    follow_up = client.post(
        f"{START}/{kept.json()['sessionId']}",
        {"message": "more", "workspaceFiles": {"c.txt": "z" * 600}},
        format="json",
    )
    assert_refused(follow_up, status=413)
    # Small enough still fits; the other tenant stores its own.
    assert (
        client.post(START, {"message": "hi", "workspaceFiles": {"d.txt": "w" * 100}}, format="json").status_code == 201
    )
    other = client_for(mallory).post(START, {"message": "hi", "workspaceFiles": {"a.txt": "x" * 2000}}, format="json")
    assert other.status_code == 201


def test_quotas_off_admit_everything(alice, client_for, settings):
    settings.PLATFORM = {**settings.PLATFORM, "QUOTAS": False}
    set_quotas(alice, max_sessions_per_minute=1, monthly_budget_usd=Decimal(0))
    client = client_for(alice)
    assert [client.post(START, {"message": "hi"}, format="json").status_code for _ in range(3)] == [201] * 3


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_open_streams_past_the_cap_are_429_or_closed_4429(alice, mallory):
    await database_sync_to_async(set_quotas)(alice, max_open_streams=2)
    session = await session_with_events(alice, 1)
    token = await token_for(alice)
    first = await open_stream(session.id, token)
    assert first.status == 200
    socket = connect(session.id, token)
    assert (await socket.connect())[0]
    await socket.receive_from(timeout=5)  # the socket streams: it holds its place

    refused = await open_stream(session.id, token)
    assert refused.status == 429 and int(refused.headers["retry-after"]) >= 1
    assert (await refused.json())["error"] == "quota_exceeded"
    third_socket = connect(session.id, token)
    await third_socket.connect()
    closed = await third_socket.receive_output(timeout=5)
    assert (closed["type"], closed["code"]) == ("websocket.close", 4429)

    theirs = await session_with_events(mallory, 1)
    other = await open_stream(theirs.id, await token_for(mallory))
    assert other.status == 200
    await other.close()

    await first.close()  # a place comes back when a stream ends
    again = await open_stream(session.id, token)
    assert again.status == 200
    await again.close()
    await socket.disconnect()
