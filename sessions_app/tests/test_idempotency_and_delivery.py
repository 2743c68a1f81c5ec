"""Retried requests and redelivered tasks do their work once."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from sessions_app.models import Event, Session, Turn, TurnStatus
from sessions_app.turn_worker import execute_turn

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_same_idempotency_key_replays_the_first_answer(alice, client_for, live_agents_dir, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    client = client_for(alice)
    client.credentials(HTTP_AUTHORIZATION=client._credentials["HTTP_AUTHORIZATION"], HTTP_IDEMPOTENCY_KEY="order-42")
    first = client.post("/lab/v1/session", {"message": "hello"}, format="json")
    again = client.post("/lab/v1/session", {"message": "hello"}, format="json")
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert Session.objects.count() == 1
    other = client.post("/lab/v1/session", {"message": "a different body"}, format="json")
    assert other.status_code == 400
    assert Session.objects.count() == 1


def test_a_turn_task_delivered_twice_at_once_runs_once(alice, client_for, live_agents_dir, settings, monkeypatch):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    # Nothing is sent to a broker here: the test plays the worker, twice.
    monkeypatch.setattr("sessions_app.services.enqueue_turn", lambda turn_id, tenant_id: None)
    started = client_for(alice).post("/lab/v1/session", {"message": "only once"}, format="json").json()
    barrier = threading.Barrier(2)

    def deliver() -> None:
        barrier.wait()
        try:
            execute_turn(started["turnId"])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    events = list(
        Event.objects.filter(session_id=started["sessionId"]).order_by("index").values_list("type", flat=True)
    )
    assert events.count("turn.started") == 1
    assert events.count("turn.completed") == 1
    assert Turn.objects.get(pk=started["turnId"]).status == TurnStatus.COMPLETED
    # A late third delivery finds nothing to claim.
    execute_turn(started["turnId"])
    assert Event.objects.filter(session_id=started["sessionId"]).count() == len(events)
