"""Outbound webhooks of a tenant (admin subscriptions), end to end: sessions over HTTP,
turns and deliveries on the real worker, a receiver on loopback speaking plain HTTP.
The worker signs with ``TEST_WEBHOOK_SECRET`` and retries after 0.2 s (conftest)."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from agent_platform.tests.factories import admin_url, staff_user_for
from sessions_app.models import WebhookDelivery, WebhookDeliveryStatus, WebhookSubscription
from sessions_app.tests.triggers.webhooks.webhook_receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-test-secret"  # the worker's TEST_WEBHOOK_SECRET


def settled(session_id: str, count: int, timeout: float = 20.0) -> list[WebhookDelivery]:
    """The session's deliveries once ``count`` of them are no longer pending."""
    deadline = time.monotonic() + timeout
    while True:
        rows = list(WebhookDelivery.objects.filter(session_id=session_id).order_by("event_index"))
        done = [row for row in rows if row.status != WebhookDeliveryStatus.PENDING]
        if len(done) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def signed_in_admin(principal) -> Client:
    client = Client()
    client.force_login(staff_user_for(principal))
    return client


def test_each_subscribed_event_is_posted_once_signed_and_only_to_its_tenant(live, alice, mallory):
    with receiver() as acme, receiver() as umbrella:
        WebhookSubscription.objects.create(
            tenant=alice.tenant, url=acme.url, events=["turn.completed"], secret_name="TEST_WEBHOOK_SECRET"
        )
        WebhookSubscription.objects.create(tenant=mallory.tenant, url=umbrella.url, events=["*"])
        lab = live(alice)

        session_id = lab.start("hello")["sessionId"]
        lab.wait_for(session_id, "turn.completed")
        assert lab.follow_up(session_id, "again").status_code == 202
        events = lab.wait_for(session_id, "turn.completed", count=2)
        posts = acme.wait_for(2)
        assert settled(session_id, 2)[-1].status == WebhookDeliveryStatus.DELIVERED
        time.sleep(0.5)  # nothing more comes: each event once, and no other type

        completed = [event for event in events if event["type"] == "turn.completed"]
        bodies = sorted((post.json() for post in acme.received), key=lambda body: body["index"])  # sent side by side
        assert bodies == [{**event, "agent": "lab"} for event in completed]
        assert all(post.signed_with(SECRET) for post in posts)
        assert not posts[0].signed_with("another secret")
        assert posts[0].headers["content-type"] == "application/json"
        assert len({post.headers["x-agent-delivery"] for post in posts}) == 2
        assert umbrella.received == []  # umbrella's subscription never hears of acme's sessions


def test_a_receiver_that_fails_once_gets_the_event_again_and_the_admin_shows_the_attempts(live, alice, mallory):
    with receiver(fail_first=1) as flaky:
        WebhookSubscription.objects.create(tenant=alice.tenant, url=flaky.url, events=["turn.completed"])
        lab = live(alice)

        session_id = lab.start("hello")["sessionId"]
        lab.wait_for(session_id, "turn.completed")
        first, second = flaky.wait_for(2)
        [delivery] = settled(session_id, 1)

    assert first.body == second.body and first.headers["x-agent-delivery"] == second.headers["x-agent-delivery"]
    assert "x-agent-signature" not in first.headers  # the subscription names no secret
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 2, 200)
    staff = signed_in_admin(alice)
    page = staff.get("/admin/sessions_app/webhookdelivery/")
    assert page.status_code == 200
    html = page.content.decode()
    assert session_id in html and "turn.completed" in html and "Delivered" in html
    detail = staff.get(admin_url(delivery, "change"))
    assert detail.status_code == 200
    assert "Delivered" in detail.content.decode() and "answered 500" not in detail.content.decode()  # the last one's
    # Another tenant's staff sees none of it.
    other = signed_in_admin(mallory)
    assert session_id not in other.get("/admin/sessions_app/webhookdelivery/").content.decode()
    assert other.get(admin_url(delivery, "change")).status_code == 302  # not theirs: back to the index


def test_a_private_address_is_refused_and_the_delivery_fails_with_the_reason(live, alice):
    # Made as a script would (the admin's form refuses this URL): the worker refuses it too.
    WebhookSubscription.objects.create(tenant=alice.tenant, url="https://10.255.255.1/hook", events=["turn.completed"])
    lab = live(alice)

    session_id = lab.start("hello")["sessionId"]
    lab.wait_for(session_id, "turn.completed")
    [delivery] = settled(session_id, 1)

    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 1, None)
    assert "refused" in delivery.last_error and "private address" in delivery.last_error
