"""Handing a session's recorded events to its channel's ``events`` handlers and its hooks.

Contract: per session, in index order and one event at a time, each event goes to
the session channel's handler for it, called ``handler(event, channel, ctx)``, then to
each hook in discovery order, called ``handler(event, ctx)`` (the event first). A
handler that raises is logged (logger ``agent_platform.hooks``, tagged so the line
shows in ``GET /<slug>/v1/logs``) and skipped. Each event reaches a handler at most
once, and a restart never replays old events.

How:

- **At most once.** ``Session.dispatched_index`` is the cursor: the last index handed
  out. A dispatcher claims a small batch by advancing the cursor under the session's
  row lock and commits *before* calling any handler. A crash after the commit loses
  the rest of that batch (at most ``BATCH_SIZE`` events); it never delivers an event
  twice.
- **In order, one at a time.** Claims alone would let two dispatchers run two batches
  side by side, so a dispatcher also holds a per-session exclusive lock while its
  handlers run: a Postgres session-level advisory lock on a connection of its own
  (a process-local lock on SQLite, whose embedded form is one process). A second
  dispatcher that finds the lock taken returns at once; the holder keeps claiming
  until nothing is left, and looks once more after releasing so that no trigger it
  turned away is lost. The
  row lock is held only for the claim, never while handlers run, so appenders are
  not held up and a slow handler holds up only its own session.
- **Triggers.** ``request_dispatch`` is called after events are appended; it enqueues
  the ``sessions_app.tasks.dispatch_events`` Celery task, coalescing bursts (see its
  docstring). ``sweep_undispatched`` (beat) catches sessions whose trigger was lost.

Webhooks: the agent's ``webhooks=`` and its tenant's subscriptions are targets too;
their deliveries are inserted in the claim's own transaction, so each matching event
is enqueued exactly once, and sent by tasks afterwards (``sessions_app.triggers.webhooks``).

Which handler: for each subscriber (the channel, then each hook) the handler for the
event's type if there is one, else its ``"*"`` handler; so a subscriber sees each
event at most once, and one with ``"*"`` sees every event.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal

from asgiref.sync import async_to_sync
from celery.exceptions import SoftTimeLimitExceeded
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnavailable

from agent_platform.rows import columns, instance
from agents.discovery import AgentSurface, ExtensionInfo
from agents.registry import subscribed_event_types, surface_for_session
from agents.sdk import HookContext
from agents.sdk._context import Artifacts
from agents.secrets import declared_secrets
from sessions_app.access import session_with_agent
from sessions_app.channel_state import channel_info, channel_session, save_channel_session
from sessions_app.host import host_for, session_info
from sessions_app.logs import agent_log_tags
from sessions_app.models import Event, Session
from sessions_app.queues import TaskName, send
from sessions_app.triggers.webhooks import (
    WebhookTarget,
    agent_targets,
    enqueue,
    request_delivery,
    session_targets,
    subscribed_types,
    tenant_types,
)

logger = logging.getLogger(__name__)
hooks_logger = logging.getLogger("agent_platform.hooks")

# Events claimed per transaction: the most a crash mid-batch can skip.
BATCH_SIZE = 16
# request_dispatch enqueues at most two tasks per session per window (leading and
# trailing edge). Whole seconds: cache backends such as Redis take integer TTLs.
DISPATCH_WINDOW_SECONDS = 1
# The trailing task runs this much after the window closes (clock skew between processes).
TRAILING_MARGIN_SECONDS = 0.25
# The sweep leaves alone sessions whose first undispatched event is younger than this:
# their trigger is most likely still on its way.
SWEEP_MIN_AGE = timedelta(seconds=5)
SWEEP_MAX_SESSIONS = 500

# sdk handlers are plain or async callables: a hook's take (event, ctx), a channel's (event, channel, ctx)
Handler = Any


@dataclass(frozen=True)
class Subscriber:
    """The session's channel or one hook: where its handlers came from, and the handlers."""

    kind: Literal["channel", "hook"]
    name: str
    events: Mapping[str, Handler]
    mount: ExtensionInfo | None = None  # the extension that contributed it (its ctx.extension)

    def handler_for(self, event_type: str) -> Handler | None:
        return self.events.get(event_type) or self.events.get("*")


def wanted_types(targets: list[Subscriber]) -> frozenset[str]:
    """The event types some target handles; ``"*"`` among them means every type."""
    return frozenset(event_type for target in targets for event_type in target.events)


def wants_any(wanted: frozenset[str], types: Collection[str]) -> bool:
    return "*" in wanted or not wanted.isdisjoint(types)


def subscribers(surface: AgentSurface, channel: str) -> list[Subscriber]:
    """The session channel's ``events`` handlers first, then every hook in discovery order."""
    found: list[Subscriber] = []
    entry = surface.channels.get(channel)
    if entry is not None and entry.value.events:
        found.append(Subscriber("channel", channel, entry.value.events, _mount(surface, entry.extension)))
    found += [
        Subscriber("hook", name, hook.value.events, _mount(surface, hook.extension))
        for name, hook in surface.hooks.items()
        if hook.value.events
    ]
    return found


def _mount(surface: AgentSurface, namespace: str | None) -> ExtensionInfo | None:
    return surface.extensions.get(namespace) if namespace is not None else None


# --- dispatching ------------------------------------------------------------------------------


def dispatch_pending(session_id: str) -> int:
    """Hand every event of the session not yet dispatched to its handlers; returns how
    many events this call handed out (0 when another dispatcher is at it already).

    Safe to call concurrently and repeatedly; call it outside a transaction (the cursor
    must commit before handlers run for the at-most-once guarantee to hold).

    Example::

        append_event(session.id, EventType.SESSION_STARTED)
        dispatch_pending(session.id)  # 1: the channel's and the hooks' handlers have run
        dispatch_pending(session.id)  # 0: nothing new
    """
    session = session_with_agent(session_id)
    if session is None:
        return 0
    handed_out = 0
    while True:
        with _exclusive(session_id) as acquired:
            if not acquired:
                return handed_out
            surface = surface_for_session(session)
            targets = subscribers(surface, session.channel)
            webhooks = session_targets(session, surface)
            if not targets and not webhooks:
                _skip_to_end(session_id)
                return handed_out
            context = _context(session, surface)
            # What the handlers log (any logger) is the agent's, on its /v1/logs.
            with agent_log_tags(
                surface, agent_slug=session.agent.slug, tenant_id=session.tenant_id, session_id=session.pk
            ):
                while True:
                    events, deliveries = _claim(session, webhooks)
                    request_delivery(deliveries)
                    for event in events:
                        _deliver(targets, context, session, event.as_record())
                    handed_out += len(events)
                    if len(events) < BATCH_SIZE:
                        break  # the log had no more; events appended since are found below
        # A dispatcher turned away while we held the lock left its events to us.
        if not _has_undispatched(session_id):
            return handed_out


def _claim(session: Session, webhooks: list[WebhookTarget]) -> tuple[list[Event], list[str]]:
    """The next batch of undispatched events, with the cursor already advanced past them,
    and the ids of the webhook deliveries inserted for them in the same transaction
    (without webhooks, the claim is one statement: no transaction around it)."""
    with transaction.atomic() if webhooks else nullcontext():
        events = claim_batch(session.pk, BATCH_SIZE)
        deliveries = enqueue(session, webhooks, events) if events else []
    return events, deliveries


def claim_batch(session_id: str, limit: int) -> list[Event]:
    """The session's next ``limit`` undispatched events, in index order, with its cursor
    (``dispatched_index``) moved past them; [] when there are none, or when the cursor
    was moved past them meanwhile (the sweep skipping unwanted events).

    Once per dispatch of every agent with hooks, so on Postgres it is one written-out
    statement (``agent_platform.rows``): the ORM's lock, read and update were five round
    trips and three query builds.
    """
    if connection.vendor != "postgresql":
        with transaction.atomic():
            dispatched = (
                Session.objects.select_for_update()
                .filter(pk=session_id)
                .values_list("dispatched_index", flat=True)
                .first()
            )
            if dispatched is None:
                return []
            events = list(Event.objects.filter(session_id=session_id, index__gt=dispatched).order_by("index")[:limit])
            if events:
                moved = Session.objects.filter(pk=session_id, dispatched_index=dispatched)
                moved.update(dispatched_index=events[-1].index)
        return events
    with connection.cursor() as cursor:
        cursor.execute(_claim_batch_sql(), {"session": session_id, "limit": limit})
        rows = cursor.fetchall()
    return [instance(Event, row) for row in rows]


@functools.cache
def _claim_batch_sql() -> str:
    # The update re-reads the session row once it holds its lock (read committed): a cursor
    # the sweep moved past the batch meanwhile leaves it unclaimed, and nothing is returned.
    sessions, events = Session._meta.db_table, Event._meta.db_table
    return (
        f"WITH batch AS (SELECT {columns(Event, 'e')} FROM {events} e "  # noqa: S608
        "WHERE e.session_id = %(session)s "
        f'AND e."index" > (SELECT dispatched_index FROM {sessions} WHERE id = %(session)s) '
        'ORDER BY e."index" LIMIT %(limit)s), '
        f'moved AS (UPDATE {sessions} SET dispatched_index = (SELECT max("index") FROM batch) '
        'WHERE id = %(session)s AND dispatched_index < (SELECT max("index") FROM batch) RETURNING 1) '
        'SELECT * FROM batch WHERE EXISTS (SELECT 1 FROM moved) ORDER BY "index"'
    )


def _skip_to_end(session_id: str) -> None:
    """No handler wants the session's events: move the cursor past all of them."""
    last = F("next_event_index") - 1
    Session.objects.filter(pk=session_id, dispatched_index__lt=last).update(dispatched_index=last)


def _has_undispatched(session_id: str) -> bool:
    if connection.vendor != "postgresql":
        return Session.objects.filter(pk=session_id, dispatched_index__lt=F("next_event_index") - 1).exists()
    with connection.cursor() as cursor:  # written out: once per dispatch, like the claim
        cursor.execute(
            f"SELECT 1 FROM {Session._meta.db_table} WHERE id = %s AND dispatched_index < next_event_index - 1",  # noqa: S608
            [session_id],
        )
        return cursor.fetchone() is not None


# ctx.artifacts of hooks and channel handlers: ``records.artifacts.SessionArtifacts``, set by
# the app's ready(). Tagging appends to the event log, and the log imports this module.
artifacts_for: Callable[[Session, str | None], Artifacts] | None = None


def _artifacts(session: Session, turn_id: str | None) -> Artifacts | None:
    return artifacts_for(session, turn_id) if artifacts_for is not None else None


def _context(session: Session, surface: AgentSurface) -> HookContext:
    return HookContext(
        # Arms are assigned only from the agent's experiments: with none, there is nothing to read.
        session=session_info(session, None if surface.experiments else {}),
        agent=session.agent.slug,
        channel=channel_info(session),
        host=host_for(session),
        artifacts=_artifacts(session, None),
    )


def _deliver(targets: list[Subscriber], context: HookContext, session: Session, event: dict[str, Any]) -> None:
    for target in targets:
        handler = target.handler_for(event["type"])
        if handler is None:
            continue
        try:
            # A context of its own: a handler that changes it cannot mislead the next one;
            # ctx.channel as of now (a channel handler before may have re-keyed the session).
            own = replace(
                context,
                session=replace(context.session),
                channel=channel_info(session),
                extension=target.mount.context() if target.mount is not None else None,
                # A tag made while handling an event belongs to that event's turn.
                artifacts=_artifacts(session, event.get("turnId")),
                # Looked up for each handler call: a secret set since is seen.
                secrets=declared_secrets(session.agent, surface_for_session(session).config.secrets),
            )
            if target.kind == "channel":
                channel, loaded = channel_session(session, target.name)
                try:
                    _call(handler, event, channel, own)
                finally:
                    save_channel_session(session, channel, loaded)
            else:
                _call(handler, event, own)
        except SoftTimeLimitExceeded:
            raise  # the task is out of time: give up (the rest of the claimed batch is skipped)
        except Exception:  # the contract: a handler that raises is logged and skipped
            hooks_logger.exception(
                "%s %r failed on %s #%d of session %s",
                target.kind,
                target.name,
                event["type"],
                event["index"],
                session.pk,
                extra={"agent_slug": session.agent.slug, "session_id": session.pk, "tenant_id": session.tenant_id},
            )


def _call(handler: Handler, *arguments: Any) -> None:
    """Run a plain or async handler to completion."""
    if inspect.iscoroutinefunction(handler):
        async_to_sync(handler)(*arguments)
        return
    result = handler(*arguments)
    if inspect.isawaitable(result):
        async_to_sync(_awaited)(result)


async def _awaited(awaitable: Any) -> None:
    await awaitable


# --- one dispatcher per session ------------------------------------------------------------------

_local_holders: set[str] = set()
_local_holders_lock = threading.Lock()


def _lock_key(session_id: str) -> int:
    """A signed 64-bit advisory-lock key for the session (collisions only delay: see the sweep)."""
    digest = hashlib.blake2b(f"sessions_app.dispatch:{session_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def _exclusive(session_id: str) -> Iterator[bool]:
    """Try to become the session's only dispatcher; yields whether we did. Never waits.

    On Postgres the advisory lock lives on a connection of its own: handlers may close
    the thread's connection (``database_sync_to_async`` closes obsolete ones), which
    would silently drop a lock held there. Closing the lock's connection releases it.
    """
    if connection.vendor != "postgresql":
        with _local_holders_lock:
            acquired = session_id not in _local_holders
            _local_holders.add(session_id)
        try:
            yield acquired
        finally:
            if acquired:
                with _local_holders_lock:
                    _local_holders.discard(session_id)
        return
    lock_connection = connections.create_connection(DEFAULT_DB_ALIAS)
    key, acquired = _lock_key(session_id), False
    try:
        with lock_connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
            row = cursor.fetchone()
        acquired = bool(row and row[0])
        yield acquired
    finally:
        # Unlock explicitly: with a connection pool, closing hands the connection back
        # to the pool still holding a session-level lock. If the unlock fails, the
        # connection itself is closed, which releases the lock and keeps it out of the pool.
        try:
            if acquired:
                with lock_connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        except DatabaseError:
            if lock_connection.connection is not None:
                lock_connection.connection.close()
        finally:
            lock_connection.close()


# --- triggers -------------------------------------------------------------------------------------


def request_dispatch(session_id: str, types: Collection[str] | None = None) -> None:
    """Ask for the session's new events to be dispatched. Call it from sync code after
    appending events (from async code: ``await sync_to_async(request_dispatch)(id)``);
    inside a transaction it waits for the commit. Cheap, and it never raises into the
    caller: a failure is logged, and the sweep catches up.

    ``types`` are the types of the events just appended: when no handler of the
    session's agent takes any of them, no task is sent (the next dispatch moves the
    cursor past them). Before looking the session up, the types are checked against
    those any agent discovered in this process subscribes to; so the events of an
    agent this process never discovered wait for the sweep.

    Bursts coalesce: per session and window of ``DISPATCH_WINDOW_SECONDS``, the first
    call enqueues the task at once (leading edge) and the first call after it enqueues
    one more, due when the window has closed (trailing edge); other calls do nothing.
    A call is only skipped while a trailing task is due after it, and that task reads
    the events this call was about, so coalescing delays (by at most a window), never
    loses. The marks live in the Django cache: with the default per-process LocMemCache
    (``CACHES`` is not configured) bursts coalesce within a process, which is where a
    turn's events come from; a shared cache (Redis) would coalesce across processes.
    Extra tasks are harmless: ``dispatch_pending`` is idempotent.

    Agents with neither hooks nor channel ``events`` handlers get no task.
    """
    transaction.on_commit(lambda: _trigger(session_id, types), robust=True)


def _trigger(session_id: str, types: Collection[str] | None) -> None:
    if (
        types is not None
        and not wants_any(subscribed_event_types(), types)
        and not wants_any(subscribed_types(), types)
    ):
        return  # no agent or webhook here handles these: not worth a query
    session = _session_to_trigger(session_id)
    if session is None:
        return
    wanted = _wanted(session, surface_for_session(session))
    if not wanted or (types is not None and not wants_any(wanted, types)):
        return
    countdown: float
    if cache.add(f"sessions_app.dispatch:lead:{session_id}", 1, DISPATCH_WINDOW_SECONDS):
        countdown = 0.0  # now
    elif cache.add(f"sessions_app.dispatch:trail:{session_id}", 1, DISPATCH_WINDOW_SECONDS):
        countdown = DISPATCH_WINDOW_SECONDS + TRAILING_MARGIN_SECONDS
    else:
        return
    _enqueue(session_id, countdown)


# What a trigger reads of a session (its agent, revision, channel and tenant) never changes
# once the session exists, and in a shared process some agent subscribes to
# ``turn.completed``: kept here, a turn's end costs no lookup of its session.
_TRIGGER_SESSIONS_KEPT = 4096
_trigger_sessions: OrderedDict[str, Session] = OrderedDict()
_trigger_sessions_lock = threading.Lock()


def remember_session(session: Session) -> None:
    """Keep ``session`` (with its agent loaded) for the triggers of its appends: a worker
    that claimed a turn has it in hand, and its turn's end then costs no lookup."""
    with _trigger_sessions_lock:
        _trigger_sessions[session.pk] = session
        _trigger_sessions.move_to_end(session.pk)
        if len(_trigger_sessions) > _TRIGGER_SESSIONS_KEPT:
            _trigger_sessions.popitem(last=False)


def _session_to_trigger(session_id: str) -> Session | None:
    """The session with its agent, from this process's most recent ones or else from the
    database (None when it does not exist)."""
    with _trigger_sessions_lock:
        session = _trigger_sessions.get(session_id)
        if session is not None:
            _trigger_sessions.move_to_end(session_id)
            return session
    session = session_with_agent(session_id)
    if session is not None:
        remember_session(session)
    return session


def _wanted(session: Session, surface: AgentSurface, fresh: bool = False) -> frozenset[str]:
    """The types the session's handlers and webhooks (agent's and tenant's) take."""
    webhook_types = frozenset(t for target in agent_targets(surface) for t in target.events)
    tenant = tenant_types(session.tenant_id, session.agent_id, fresh)
    return wanted_types(subscribers(surface, session.channel)) | webhook_types | tenant


def _enqueue(session_id: str, countdown: float = 0.0) -> None:
    try:
        send(TaskName.DISPATCH_EVENTS, session_id, countdown=countdown)
    except BrokerUnavailable:
        logger.warning("could not enqueue the dispatch of %s; the sweep will", session_id, exc_info=True)


def sweep_undispatched(min_age: timedelta = SWEEP_MIN_AGE, limit: int = SWEEP_MAX_SESSIONS) -> int:
    """Catch up on sessions whose dispatch fell behind (a lost trigger); returns how many.

    Sessions of agents that subscribe to nothing, or to none of the events waiting,
    get their cursor moved to the end (so a hook added later never sees old events);
    the others get a dispatch task.
    """
    first_undispatched = Event.objects.filter(
        session=OuterRef("pk"), index=OuterRef("dispatched_index") + 1, at__lt=timezone.now() - min_age
    )
    lagging = list(
        Session.objects.filter(dispatched_index__lt=F("next_event_index") - 1)
        .filter(Exists(first_undispatched))
        .select_related("agent")[:limit]
    )
    wanted: dict[tuple[int, str | None, str, int], frozenset[str]] = {}
    idle: list[str] = []
    for session in lagging:
        key = (session.agent_id, session.revision_id, session.channel, session.tenant_id)
        if key not in wanted:
            # Fresh: the sweep is what catches events a stale per-process snapshot let pass.
            wanted[key] = _wanted(session, surface_for_session(session), fresh=not wanted)
        if not wanted[key]:
            idle.append(session.pk)
        elif not _skip_unwanted(session, wanted[key]):
            _enqueue(session.pk)
    if idle:
        last = F("next_event_index") - 1
        Session.objects.filter(pk__in=idle, dispatched_index__lt=last).update(dispatched_index=last)
    return len(lagging)


def _skip_unwanted(session: Session, wanted: frozenset[str]) -> bool:
    """Move the cursor past the session's waiting events if no handler takes any of
    them; False (and nothing moved) when one does. Only the events the sweep saw are
    skipped, and only if no dispatcher moved the cursor meanwhile."""
    if "*" in wanted:
        return False
    cursor, last = session.dispatched_index, session.next_event_index - 1
    waiting = Event.objects.filter(session_id=session.pk, index__gt=cursor, index__lte=last)
    if waiting.filter(type__in=wanted).exists():
        return False
    Session.objects.filter(pk=session.pk, dispatched_index=cursor).update(dispatched_index=last)
    return True
