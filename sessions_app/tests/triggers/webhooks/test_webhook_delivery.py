"""Outbound webhooks in one process: an agent's own ``webhooks=`` (its URL is known only
once the test's receiver listens, so no worker has it), attempts running out, and the
admin's subscription form. The dispatcher and ``deliver`` are called as the tasks would."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from agent_platform.tests.factories import staff_user_for
from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.dispatch import dispatch_pending
from sessions_app.models import WebhookDelivery, WebhookDeliveryStatus, WebhookSubscription
from sessions_app.tests.factories import SessionFactory
from sessions_app.tests.triggers.webhooks.webhook_receiver import receiver
from sessions_app.triggers.webhooks import deliver, sweep_due

AGENT = """
    from agents.sdk import define_agent

    agent = define_agent(webhooks=[{{"url": {url!r}, "events": ["session.started"], "secret": "HOOKED_SECRET"}}])
"""


@pytest.fixture
def hooked(tmp_path, settings):
    """An AGENTS_DIR whose ``hooked`` agent posts its ``session.started`` to a receiver."""

    def make(url: str) -> None:
        write_tree(tmp_path / "hooked", {**INSTRUCTIONS, "agent/agent.py": AGENT.format(url=url)})
        settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": tmp_path, "OUTBOUND_ALLOW": ("127.0.0.1",)}

    return make


@pytest.mark.django_db(transaction=True)
def test_an_agents_own_webhook_gets_its_subscribed_event_once_signed(hooked, client_for, alice, monkeypatch):
    monkeypatch.setenv("HOOKED_SECRET", "s3cret")
    with receiver() as inbox:
        hooked(inbox.url)
        client = client_for(alice)
        created = client.post("/hooked/v1/session", {"message": "hi"}, format="json")
        assert created.status_code == 201, created.content
        session_id = created.json()["sessionId"]

        dispatch_pending(session_id)
        dispatch_pending(session_id)  # nothing new: nothing enqueued twice
        [delivery] = WebhookDelivery.objects.filter(session_id=session_id)
        assert deliver(delivery.pk) == WebhookDeliveryStatus.DELIVERED
        assert deliver(delivery.pk) is None  # delivered: a second task does nothing

    [post] = inbox.received
    started = client.get(f"/hooked/v1/session/{session_id}/events").json()["events"][0]
    assert post.json() == {**started, "agent": "hooked"} and started["type"] == "session.started"
    assert post.signed_with("s3cret")


@pytest.mark.django_db(transaction=True)
def test_a_webhook_whose_secret_is_not_set_is_not_sent_unsigned(hooked, client_for, alice, monkeypatch):
    monkeypatch.delenv("HOOKED_SECRET", raising=False)
    with receiver() as inbox:
        hooked(inbox.url)
        session_id = client_for(alice).post("/hooked/v1/session", {"message": "hi"}, format="json").json()["sessionId"]
        dispatch_pending(session_id)
        [delivery] = WebhookDelivery.objects.filter(session_id=session_id)
        assert deliver(delivery.pk) == WebhookDeliveryStatus.PENDING

    assert inbox.received == []
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and "HOOKED_SECRET" in delivery.last_error


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_keeps_failing_gets_its_attempts_then_the_delivery_fails(
    hooked, client_for, alice, settings, monkeypatch
):
    monkeypatch.setenv("HOOKED_SECRET", "s3cret")
    with receiver(fail_first=10) as broken:
        hooked(broken.url)
        settings.PLATFORM = {**settings.PLATFORM, "WEBHOOK_MAX_ATTEMPTS": 2, "WEBHOOK_BACKOFF_SECONDS": 0.01}
        session_id = client_for(alice).post("/hooked/v1/session", {"message": "hi"}, format="json").json()["sessionId"]
        dispatch_pending(session_id)
        [delivery] = WebhookDelivery.objects.filter(session_id=session_id)

        assert deliver(delivery.pk) == WebhookDeliveryStatus.PENDING
        time.sleep(0.05)
        assert sweep_due() == 1  # due again: the sweep would send it
        assert deliver(delivery.pk) == WebhookDeliveryStatus.FAILED
        assert sweep_due() == 0

    assert len(broken.received) == 2
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 2, 500)
    assert delivery.last_error == "answered 500"


@pytest.mark.django_db(transaction=True)
def test_a_subscription_turned_off_after_its_event_was_enqueued_sends_nothing(client_for, alice, settings):
    with receiver() as inbox:
        settings.PLATFORM = {**settings.PLATFORM, "OUTBOUND_ALLOW": ("127.0.0.1",)}
        subscription = WebhookSubscription.objects.create(tenant=alice.tenant, url=inbox.url, events=["*"])
        session_id = client_for(alice).post("/weather/v1/session", {"message": "hi"}, format="json").json()["sessionId"]
        dispatch_pending(session_id)
        subscription.active = False
        subscription.save()
        deliveries = list(WebhookDelivery.objects.filter(session_id=session_id))
        assert deliveries and all(deliver(delivery.pk) == WebhookDeliveryStatus.FAILED for delivery in deliveries)

    assert inbox.received == []
    assert {row.last_error for row in WebhookDelivery.objects.all()} == {"the subscription is gone or off"}


@pytest.mark.django_db
def test_settled_deliveries_are_deleted_after_a_week_and_pending_ones_kept(alice):
    session = SessionFactory(principal=alice)
    old = timezone.now() - timedelta(days=8)
    for index, status in enumerate(["delivered", "failed", "pending"]):
        WebhookDelivery.objects.create(
            target="agent:https://hooks.example.com/",
            url="https://hooks.example.com/",
            session=session,
            event_index=index,
            event_type="turn.completed",
            payload={},
            status=status,
            created_at=old,
            next_attempt_at=timezone.now() + timedelta(hours=1),
        )
    assert sweep_due() == 0
    assert list(WebhookDelivery.objects.values_list("status", flat=True)) == ["pending"]


@pytest.mark.django_db
def test_the_admin_refuses_a_subscription_to_a_private_address_and_saves_a_public_one(alice):
    client = Client()
    client.force_login(staff_user_for(alice))
    form = {"url": "https://10.0.0.7/hook", "events": '["turn.completed"]', "secret_name": "", "active": "on"}
    form |= {"created_at_0": "2026-12-01", "created_at_1": "12:00:00"}

    refused = client.post("/admin/sessions_app/webhooksubscription/add/", form)
    assert refused.status_code == 200 and "outbound policy refuses" in refused.content.decode()
    assert not WebhookSubscription.objects.exists()

    saved = client.post("/admin/sessions_app/webhooksubscription/add/", {**form, "url": "https://hooks.example.com/in"})
    assert saved.status_code == 302, saved.content.decode()[:2000]
    [subscription] = WebhookSubscription.objects.all()
    assert subscription.tenant == alice.tenant and subscription.events == ["turn.completed"]
