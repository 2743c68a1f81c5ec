"""The Celery application. Its configuration is the ``CELERY_*`` Django settings.

It also carries two narrow patches of kombu's Redis transport, applied to every
process that configures Celery (worker, beat and web all import this module):
see ``guard_orphaned_redis_channels`` and ``reuse_redis_clients``.
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, before_task_publish, task_postrun, task_prerun
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")


class OrphanedChannelError(RedisConnectionError):
    """A kombu Redis channel was used after its broker connection was closed."""


def guard_orphaned_redis_channels() -> None:
    """Make a Redis channel that outlived its connection fail with a connection error.

    The worker died with ``Unrecoverable error: AttributeError("'NoneType' object
    has no attribute 'hostname'")`` after some Redis restarts (celery 5.7.0,
    kombu 5.7.0). On a lost broker connection celery's consumer
    (``on_connection_error_after_connected``) calls ``connection.collect()`` and
    then ``connection.close()``. ``collect()`` closes the default channel, which
    stops at its first step (reading the reply of the BRPOP in flight raises a
    connection error), then the transport's other channels, which stops at the
    first that fails too (remote control's, deleting its fanout queue), and then
    drops the transport's ``client``, but keeps the half-closed default channel.
    ``close()`` closes that channel again: this time it gets as far as
    putting back the unacked messages (``QoS.restore_unacked_once``), which needs
    a fresh connection pool, built from ``transport.client.hostname``. That client
    is None, so it raises AttributeError. celery only treats connection errors as
    recoverable, so the AttributeError ends the worker. The same happens when a
    task delivered before the loss is acked on its old channel after the worker
    reconnected (the ack runs as a callback of the event loop, which lets any
    exception through), and a thread that publishes through a pooled producer
    whose channel was closed gets AttributeError('client') instead of a broker error.

    The narrow fix is at the one place those paths meet: a channel builds a
    connection pool (``Channel._connparams``) without a connection to build it for.
    There it now raises ``OrphanedChannelError``, a ``redis.ConnectionError``, so
    every caller's existing connection-error handling applies: the close is
    ignored (``maybe_close_channel``), a late ack is logged and left to the
    visibility timeout (turns are idempotent), and a publish is retried by kombu
    or fails as "broker unavailable", which the platform handles (the sweeper
    enqueues the turn later). Idempotent; harmless once kombu fixes it.
    """
    channel: Any = kombu_redis.Channel  # a private method: kombu's types do not list it
    original = channel._connparams
    if getattr(original, "orphan_guard", False):
        return

    @functools.wraps(original)
    def _connparams(self: Any, *args: Any, **kwargs: Any) -> Any:
        transport = self.connection
        if transport is None or transport.client is None:
            raise OrphanedChannelError("the channel's broker connection is closed")
        return original(self, *args, **kwargs)

    _connparams.orphan_guard = True  # type: ignore[attr-defined]
    channel._connparams = _connparams


def reuse_redis_clients() -> None:
    """Let a Redis channel keep one client for its synchronous commands.

    kombu 5.7.0 builds a new ``redis.Redis`` for every publish (``Channel._put``) and
    for each of the two pipelines that index and un-index a delivered message (the
    worker's receive and ack): ``conn_or_acquire()`` with no client calls
    ``_create_client()``. Each build fills a table of some 200 response callbacks:
    about 40% of the CPU of a turn's publish in the web process, and two more builds
    in the worker for each task it takes. A Redis client is safe to share between
    threads (it borrows a connection from the pool for each command), so a channel
    now reuses one, built again only when the channel's pool is replaced (after a
    fork or a lost connection); a closed channel still fails as
    ``guard_orphaned_redis_channels`` makes it. Idempotent.
    """
    channel: Any = kombu_redis.Channel
    original = channel.conn_or_acquire
    if getattr(original, "reuses_client", False):
        return

    @functools.wraps(original)
    @contextmanager
    def conn_or_acquire(self: Any, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        pool = self.pool
        kept = self.__dict__.get("_kept_sync_client")
        if kept is None or kept.connection_pool is not pool:
            kept = self.__dict__["_kept_sync_client"] = self._create_client()
        yield kept

    conn_or_acquire.reuses_client = True  # type: ignore[attr-defined]
    channel.conn_or_acquire = conn_or_acquire


def create_app(name: str = "agent_platform") -> Celery:
    """A Celery app configured from the Django settings, with every app's tasks."""
    guard_orphaned_redis_channels()
    reuse_redis_clients()
    celery_app = Celery(name, set_as_current=name == "agent_platform")
    celery_app.config_from_object("django.conf:settings", namespace="CELERY")
    celery_app.autodiscover_tasks()
    return celery_app


@after_setup_logger.connect
def _console_level_from_loglevel(logger: Any, loglevel: int, **_: Any) -> None:
    """``--loglevel`` is the console's; the database still keeps INFO for ``/v1/logs``."""
    from sessions_app.logs import keep_info_for_the_database

    keep_info_for_the_database(logger, loglevel)


# The scope each task ran in before it (a task run eagerly runs inside its caller's).
_scopes_before: dict[str, contextvars.Token[str]] = {}


@task_prerun.connect
def _tasks_span_tenants(task_id: str, **_: Any) -> None:
    """A task is the platform's work: sweeps, retention, scheduling, a turn's claim and
    settling span tenants (``agent_platform.rls``). The turn worker enters the turn's
    tenant itself for the part that runs the agent's code."""
    from agent_platform import rls

    _scopes_before[task_id] = rls.enter_platform()


@task_postrun.connect
def _task_scope_ends(task_id: str, **_: Any) -> None:
    from agent_platform import rls

    token = _scopes_before.pop(task_id, None)
    if token is not None:
        rls.restore(token)


# The message header that carries the sender's request id to the task.
REQUEST_ID_HEADER = "platform_request_id"
_request_ids_before: dict[str, contextvars.Token[str]] = {}


@before_task_publish.connect
def _send_the_request_id(headers: dict[str, Any] | None = None, **_: Any) -> None:
    """A task sent while a request (or a task, or a turn) is served carries its id."""
    from agent_platform.request_ids import current_request_id

    value = current_request_id()
    if value and headers is not None:
        headers[REQUEST_ID_HEADER] = value


@task_prerun.connect
def _task_request_id(task_id: str, task: Any = None, **_: Any) -> None:
    """A task runs under the id it was sent with, or a new one (sent by beat): its lines,
    and the turns it starts, carry it. A task run eagerly keeps its caller's."""
    from agent_platform import request_ids

    if task is None or task.request.is_eager:
        return
    carried = task.request.get(REQUEST_ID_HEADER)
    _request_ids_before[task_id] = request_ids.enter(request_ids.accepted_or_new(carried))


@task_postrun.connect
def _task_request_id_ends(task_id: str, **_: Any) -> None:
    from agent_platform import request_ids

    token = _request_ids_before.pop(task_id, None)
    if token is not None:
        request_ids.restore(token)


app = create_app()
