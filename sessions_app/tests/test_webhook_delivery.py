"""Outbound webhooks in one process: an agent's own ``webhooks=`` (its URL is known only
once the test's receiver listens, so no worker has it), attempts running out, and the
admin's subscription form. The dispatcher and ``deliver`` are called as the tasks would."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from agent_platform.tests.factories import staff_user_for
from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.dispatch import dispatch_pending
from sessions_app.models import WebhookDelivery, WebhookDeliveryStatus, WebhookSubscription
from sessions_app.tests.webhook_receiver import receiver
from sessions_app.webhooks import deliver, sweep_due

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
