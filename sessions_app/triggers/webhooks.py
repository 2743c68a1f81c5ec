"""Outbound webhooks: a session's events POSTed to the URLs its agent
(``define_agent(webhooks=[...])``) or its tenant (``WebhookSubscription`` in the admin)
names, signed, retried with backoff, through the outbound policy.

How:

- **Once per event.** ``sessions_app.dispatch`` claims a batch of a session's events and,
  in the same transaction, inserts one ``WebhookDelivery`` per (webhook, event) that
  matches; UNIQUE (target, session, event index) makes a second insert a no-op. So an
  event is enqueued exactly once, even across a crash (the claim and the rows commit
  together).
- **Sent by a task.** After the claim commits, one ``deliver_webhook`` task per row is
  sent (hooks queue). ``deliver`` claims the row with a conditional UPDATE (pending and
  due), which pushes ``next_attempt_at`` past the request's timeout, so two tasks never
  send the same attempt; a worker that dies mid-request leaves the row due again later
  (the receiver may then see it twice: ``X-Agent-Delivery`` lets it tell).
- **Retries.** A connection error or a non-2xx answer schedules the next attempt after
  ``PLATFORM['WEBHOOK_BACKOFF_SECONDS']``, doubled each time, up to
  ``PLATFORM['WEBHOOK_MAX_ATTEMPTS']`` attempts; then the row is ``failed``. A short wait
  goes on the broker as a countdown; a long one is left to ``sweep_due`` (beat), so no
  long ETAs sit on the broker. A URL the outbound policy refuses can never succeed: it
  fails at once with the refusal as ``last_error``.
- **Cheap when unused.** Agents without webhooks, of tenants without subscriptions, pay
  no query: ``dispatch`` asks ``subscribed_types`` (a per-process snapshot of the active
  subscriptions' event types) before looking at a session. The snapshot is read on first
  use, again at once in the process that saves a subscription, and, in a process running
  a Celery worker (where a turn's events are recorded), again when it is older than
  ``PLATFORM['WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS']``. A web process never re-reads it on
  a timer: that read would land in some request's statements (they are counted), and
  the events a request records are followed by its turn's, recorded on a worker, whose
  dispatch takes the earlier ones along. Whatever a stale snapshot lets pass, the
  dispatch sweep (which reads the table) catches up, so no event is lost.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx2
from asgiref.sync import async_to_sync
from celery.signals import worker_init, worker_shutdown
from django.db import connection
from django.db.models import Q
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from agent_platform.conf import platform_settings
from agent_platform.rows import columns, instance
from agents.config import outbound_policy
from agents.discovery import AgentSurface
from agents.runtime.outbound import OutboundRefused, guarded_client
from agents.secrets import resolve
from sessions_app.models import (
    Event,
    Session,
    WebhookDelivery,
    WebhookDeliveryStatus,
    WebhookSubscription,
)
from sessions_app.queues import TaskName, send

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Agent-Signature"
DELIVERY_HEADER = "X-Agent-Delivery"
# How long one attempt may take; a claimed row is not due again before this has passed.
REQUEST_TIMEOUT_SECONDS = 15.0
CLAIM_SECONDS = REQUEST_TIMEOUT_SECONDS + 15
# Retries due sooner than this ride on the broker as a countdown; later ones wait for the sweep.
COUNTDOWN_MAX_SECONDS = 30.0
# A countdown task arrives this much after the row is due (a task that came early finds it not due).
COUNTDOWN_MARGIN_SECONDS = 0.1
SWEEP_MAX_DELIVERIES = 500
# Delivered and failed rows are kept this long for the admin, then deleted by the sweep.
KEEP_SETTLED = timedelta(days=7)
ERROR_CHARS = 500


@dataclass(frozen=True)
class WebhookTarget:
    """One webhook of a session: the agent's own, or a tenant subscription."""

    key: str
    url: str
    events: frozenset[str]
    secret_name: str = ""
    subscription_id: int | None = None

    def wants(self, event_type: str) -> bool:
        return "*" in self.events or event_type in self.events


def agent_targets(surface: AgentSurface) -> list[WebhookTarget]:
    return [
        WebhookTarget(f"agent:{hook.url}", hook.url, frozenset(hook.events), hook.secret or "")
        for hook in surface.config.webhooks
    ]


def session_targets(session: Session, surface: AgentSurface) -> list[WebhookTarget]:
    """The agent's webhooks and the tenant's active subscriptions for this agent (one query)."""
    return agent_targets(surface) + [
        WebhookTarget(f"subscription:{row.pk}", row.url, frozenset(row.events), row.secret_name, row.pk)
        for row in active_subscriptions(session.tenant_id, session.agent_id)
    ]


def active_subscriptions(tenant_id: int, agent_id: int) -> list[WebhookSubscription]:
    """The tenant's active subscriptions that take this agent's sessions (its own and the
    tenant-wide ones). Read at every dispatch, so on Postgres the query is written out
    (``agent_platform.rows``)."""
    if connection.vendor != "postgresql":
        query = WebhookSubscription.objects.filter(tenant_id=tenant_id, active=True)
        return list(query.filter(Q(agent__isnull=True) | Q(agent_id=agent_id)))
    with connection.cursor() as cursor:
        cursor.execute(_active_subscriptions_sql(), [tenant_id, agent_id])
        return [instance(WebhookSubscription, row) for row in cursor.fetchall()]


@functools.cache
def _active_subscriptions_sql() -> str:
    return (
        f"SELECT {columns(WebhookSubscription, 'w')} FROM {WebhookSubscription._meta.db_table} w "  # noqa: S608
        "WHERE w.tenant_id = %s AND w.active AND (w.agent_id IS NULL OR w.agent_id = %s) ORDER BY w.id"
    )


# --- which types anyone wants, per process ---------------------------------------------------

_snapshot_lock = threading.Lock()
_snapshot: tuple[float, dict[tuple[int, int | None], frozenset[str]]] | None = None
_workers_running = 0  # Celery workers in this process: while any runs, the snapshot expires


def _worker_started(**_: Any) -> None:
    global _workers_running
    with _snapshot_lock:
        _workers_running += 1


def _worker_stopped(**_: Any) -> None:
    global _workers_running
    with _snapshot_lock:
        _workers_running = max(_workers_running - 1, 0)


worker_init.connect(_worker_started, weak=False, dispatch_uid="webhooks.worker_started")
worker_shutdown.connect(_worker_stopped, weak=False, dispatch_uid="webhooks.worker_stopped")


def _subscriptions_by_scope(fresh: bool = False) -> dict[tuple[int, int | None], frozenset[str]]:
    """``{(tenant id, agent id or None): event types}`` of the active subscriptions."""
    global _snapshot
    with _snapshot_lock:
        current, expires = _snapshot, _workers_running > 0
    if not fresh and current is not None:
        loaded_at, scopes = current
        if not expires or time.monotonic() - loaded_at < platform_settings.WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS:
            return scopes
    found: dict[tuple[int, int | None], set[str]] = {}
    for tenant_id, agent_id, events in WebhookSubscription.objects.filter(active=True).values_list(
        "tenant_id", "agent_id", "events"
    ):
        found.setdefault((tenant_id, agent_id), set()).update(events or ())
    snapshot = {scope: frozenset(types) for scope, types in found.items()}
    with _snapshot_lock:
        _snapshot = (time.monotonic(), snapshot)
    return snapshot


def forget_subscriptions(**_: Any) -> None:
    """A subscription was saved or deleted here: reload on next use (other processes: in time)."""
    global _snapshot
    with _snapshot_lock:
        _snapshot = None


post_save.connect(forget_subscriptions, sender=WebhookSubscription, dispatch_uid="webhooks.forget.save")
post_delete.connect(forget_subscriptions, sender=WebhookSubscription, dispatch_uid="webhooks.forget.delete")


def subscribed_types() -> frozenset[str]:
    """The event types some tenant subscription takes (``"*"``: every type)."""
    return frozenset(event_type for types in _subscriptions_by_scope().values() for event_type in types)


def tenant_types(tenant_id: int, agent_id: int, fresh: bool = False) -> frozenset[str]:
    """The event types the tenant's subscriptions take for sessions of this agent."""
    scopes = _subscriptions_by_scope(fresh)
    return scopes.get((tenant_id, None), frozenset()) | scopes.get((tenant_id, agent_id), frozenset())


# --- enqueueing (inside the dispatcher's claim) -----------------------------------------------


def enqueue(session: Session, targets: Iterable[WebhookTarget], events: Iterable[Event]) -> list[str]:
    """Insert a pending delivery per (target, matching event); returns the new rows' ids.
    Call inside the transaction that claims the events: both commit or neither."""
    rows = [
        WebhookDelivery(
            target=target.key[:1100],
            subscription_id=target.subscription_id,
            url=target.url,
            secret_name=target.secret_name,
            session_id=session.pk,
            event_index=event.index,
            event_type=event.type,
            payload={**event.as_record(), "agent": session.agent.slug},
        )
        for event in events
        for target in targets
        if target.wants(event.type)
    ]
    if not rows:
        return []
    WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    # With ignore_conflicts the ids of rows that already existed are not in the table: a task
    # sent for one finds nothing to do.
    return [row.pk for row in rows]


def request_delivery(delivery_ids: Iterable[str], countdown: float | None = None) -> None:
    """Send a ``deliver_webhook`` task per id; a broker outage is left to the sweep."""
    for delivery_id in delivery_ids:
        try:
            send(TaskName.DELIVER_WEBHOOK, delivery_id, countdown=countdown)
        except BrokerUnavailable:
            logger.warning("could not enqueue webhook delivery %s; the sweep will", delivery_id, exc_info=True)
            return


# --- sending -------------------------------------------------------------------------------------


def signature(secret: str, body: bytes) -> str:
    """The ``X-Agent-Signature`` value: ``sha256=`` and the hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def backoff(attempts: int) -> float:
    """Seconds before the attempt after ``attempts`` failed ones."""
    return float(platform_settings.WEBHOOK_BACKOFF_SECONDS) * 2 ** max(attempts - 1, 0)


class AttemptFailed(Exception):
    """This attempt did not deliver, and a later one may (``status_code`` if there was an answer)."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def deliver(delivery_id: str) -> WebhookDeliveryStatus | None:
    """Make one attempt at a due delivery; returns its status after, or None when it was
    not due (delivered, failed, or claimed by another attempt)."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=WebhookDeliveryStatus.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS))
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("session__agent", "subscription").get(pk=delivery_id)
    attempts = delivery.attempts + 1
    if delivery.target.startswith("subscription:") and not (delivery.subscription and delivery.subscription.active):
        # Turned off or deleted since the event was enqueued: its owner no longer wants it.
        return _record(
            delivery, delivery.attempts, WebhookDeliveryStatus.FAILED, None, "the subscription is gone or off"
        )
    try:
        status_code = _attempt(delivery)
    except OutboundRefused as refused:
        return _record(delivery, attempts, WebhookDeliveryStatus.FAILED, None, f"refused: {refused}")
    except AttemptFailed as failed:
        if attempts >= platform_settings.WEBHOOK_MAX_ATTEMPTS:
            return _record(delivery, attempts, WebhookDeliveryStatus.FAILED, failed.status_code, str(failed))
        wait = backoff(attempts)
        _record(delivery, attempts, WebhookDeliveryStatus.PENDING, failed.status_code, str(failed), wait)
        if wait <= COUNTDOWN_MAX_SECONDS:
            request_delivery([delivery.pk], countdown=wait + COUNTDOWN_MARGIN_SECONDS)
        return WebhookDeliveryStatus.PENDING
    return _record(delivery, attempts, WebhookDeliveryStatus.DELIVERED, status_code, "")


def _attempt(delivery: WebhookDelivery) -> int:
    """POST the payload once; the status code of a 2xx answer.

    Raises:
        OutboundRefused: the policy refuses the URL or where it resolves.
        AttemptFailed: no answer, a non-2xx answer, or a named secret that is not set.
    """
    body = encode(delivery.payload)
    headers = {"Content-Type": "application/json", DELIVERY_HEADER: delivery.pk, "User-Agent": "agent-platform"}
    if delivery.secret_name:
        secret = resolve(delivery.secret_name, agent=delivery.session.agent)
        if secret is None:
            # Never send unsigned what should be signed: wait for the secret to be set.
            raise AttemptFailed(f"the secret {delivery.secret_name!r} is not set")
        headers[SIGNATURE_HEADER] = signature(secret, body)
    return async_to_sync(_post)(delivery.url, body, headers)


async def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    # No redirects: a receiver that moved says so, rather than the body following it.
    async with guarded_client(outbound_policy(), follow_redirects=False, timeout=REQUEST_TIMEOUT_SECONDS) as client:
        try:
            response = await client.post(url, content=body, headers=headers)
        except OutboundRefused:
            raise
        except httpx2.HTTPError as error:
            raise AttemptFailed(f"{type(error).__name__}: {error}") from None
    if not 200 <= response.status_code < 300:
        raise AttemptFailed(f"answered {response.status_code}", response.status_code)
    return response.status_code


def _record(
    delivery: WebhookDelivery,
    attempts: int,
    status: WebhookDeliveryStatus,
    status_code: int | None,
    error: str,
    wait: float = 0.0,
) -> WebhookDeliveryStatus:
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=attempts,
        status=status,
        last_status_code=status_code,
        last_error=error[:ERROR_CHARS],
        next_attempt_at=now + timedelta(seconds=wait),
        delivered_at=now if status == WebhookDeliveryStatus.DELIVERED else None,
    )
    if status == WebhookDeliveryStatus.FAILED:
        logger.warning(
            "webhook delivery %s to %s failed after %d attempt(s): %s", delivery.pk, delivery.url, attempts, error
        )
    return status


def sweep_due(limit: int = SWEEP_MAX_DELIVERIES) -> int:
    """Send a task for each pending delivery that is due (beat); returns how many. Also
    deletes settled rows older than ``KEEP_SETTLED`` (a bounded table stays bounded)."""
    old = WebhookDelivery.objects.filter(created_at__lt=timezone.now() - KEEP_SETTLED).exclude(
        status=WebhookDeliveryStatus.PENDING
    )
    WebhookDelivery.objects.filter(pk__in=list(old.values_list("pk", flat=True)[:limit])).delete()
    due = list(
        WebhookDelivery.objects.filter(status=WebhookDeliveryStatus.PENDING, next_attempt_at__lte=timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    request_delivery(due)
    return len(due)
