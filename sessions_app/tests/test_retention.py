"""Retention on a real worker (the beat task, sent through the broker): sessions idle past
their agent's, tenant's or the platform's retention go with their log, turns, workspace
and idempotency records; nothing newer goes; a kept session's idle workspace is trimmed;
old trigger records are pruned; the admin lists what is due first."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from agent_platform.tests.factories import staff_user_for
from agents.registry import get_agent
from sessions_app.models import Artifact, Event, IdempotencyRecord, InboundDelivery, Session, Turn
from sessions_app.queues import TaskName, send

pytestmark = pytest.mark.django_db(transaction=True)


def test_retention_removes_what_is_due_and_nothing_newer(live, alice, mallory, celery_worker_process):
    alice.tenant.retention_days = 7  # acme's default; lab's own 30 days win over it
    alice.tenant.save()
    lab, weather, strangers = live(), live(slug="weather"), live(mallory, slug="weather")
    answer = lab.client.post("/lab/v1/session", {"message": "old"}, format="json", HTTP_IDEMPOTENCY_KEY="k-old")
    started = {
        "lab_31d": answer.json()["sessionId"],  # past lab's 30 days: goes
        "lab_8d": lab.start("younger than lab's own")["sessionId"],  # kept, workspace trimmed
        "lab_now": lab.start("just now")["sessionId"],  # kept, workspace kept
        "weather_8d": weather.start("past acme's 7 days")["sessionId"],  # goes
        "umbrella_8d": strangers.start("umbrella: the platform's 90")["sessionId"],  # kept
        "artifact_31d": lab.start("holds an artifact")["sessionId"],  # goes; its artifact stays (its own retention)
    }
    for name, session_id in started.items():
        (strangers if name.startswith("umbrella") else weather if name.startswith("weather") else lab).wait_for(
            session_id, "session.waiting"
        )
    workspaces = celery_worker_process.var_dir / "workspaces"
    assert all((workspaces / session_id).is_dir() for session_id in started.values())
    now = timezone.now()
    for name, session_id in started.items():
        if not name.endswith("now"):
            days = int(name.rsplit("_", 1)[1].removesuffix("d"))
            Session.objects.filter(pk=session_id).update(updated_at=now - timedelta(days=days))
    holder = Session.objects.get(pk=started["artifact_31d"])
    artifact = Artifact.objects.create(
        session=holder, tenant=holder.tenant, agent=holder.agent, principal=holder.principal, kind="report", name="r"
    )
    agent = get_agent("lab")
    InboundDelivery.objects.create(agent=agent, source="slack", delivery_id="old", received_at=now - timedelta(days=31))
    InboundDelivery.objects.create(agent=agent, source="slack", delivery_id="new")
    due = {started["lab_31d"], started["weather_8d"], started["artifact_31d"]}

    # The admin shows what the next pass will remove.
    admin = Client()
    admin.force_login(staff_user_for(alice))
    page = admin.get("/admin/sessions_app/session/?retention=due").content.decode()
    assert all(session_id in page for session_id in due)
    assert not any(session_id in page for session_id in set(started.values()) - due)

    send(TaskName.RUN_RETENTION)

    def pass_done() -> bool:  # sessions go first; kept sessions' idle workspaces are trimmed last
        trimmed = not (workspaces / started["lab_8d"]).exists()
        return trimmed and not Session.objects.filter(pk__in=due).exists()

    deadline = time.monotonic() + 20
    while not pass_done() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (
        set(Session.objects.filter(pk__in=started.values()).values_list("pk", flat=True)) == set(started.values()) - due
    )
    assert not Event.objects.filter(session_id__in=due).exists() and not Turn.objects.filter(session_id__in=due)
    assert not IdempotencyRecord.objects.filter(key="k-old").exists()
    artifact.refresh_from_db()  # artifacts outlive their session and follow their own retention
    assert artifact.session_id is None
    assert lab.client.get(f"/lab/v1/session/{started['lab_31d']}").status_code == 404
    for name, session_id in started.items():
        assert (workspaces / session_id).is_dir() == (name == "lab_now"), name
    kept = lab.events(started["lab_8d"])
    assert [e["index"] for e in kept] == list(range(len(kept))) and kept[-1]["type"] == "session.waiting"
    assert set(InboundDelivery.objects.values_list("delivery_id", flat=True)) == {"new"}
    # A trimmed workspace comes back with the session's next turn.
    assert lab.follow_up(started["lab_8d"], "again").status_code == 202
    lab.wait_for(started["lab_8d"], "session.waiting", count=2)
    assert (workspaces / started["lab_8d"] / "AGENTS.md").is_file()
