"""The kombu Redis guard of ``agent_platform.celery``: what celery's consumer does when
its Redis goes away, replayed step by step on a Redis server of the test's own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from kombu import Connection, Exchange, Queue
from kombu.transport import redis as kombu_redis

from agent_platform.celery import OrphanedChannelError
from bench.harness import Processes
from sessions_app.tests.faults.servers import OwnRedis

pytestmark = pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server")


@pytest.fixture
def redis(tmp_path) -> Iterator[OwnRedis]:
    server = OwnRedis(Processes(tmp_path))
    server.start()
    yield server
    server.processes.stop_all()


def lose_redis_while_consuming(redis: OwnRedis) -> tuple[Connection, Any]:
    """A connection in the state of a worker's when its Redis dies: a message delivered
    and not acked yet (a running task, late ack), the next BRPOP in flight on the
    default channel, and a second channel with an auto-delete fanout queue (celery's
    remote control) opened after it; then Redis is killed. Returns the connection and
    the delivered message."""
    connection = Connection(f"{redis.url}/0")
    tasks = Queue("tasks")
    with connection.Producer() as producer:
        for n in range(2):
            producer.publish({"n": n}, routing_key="tasks", declare=[tasks])
    delivered: list[Any] = []
    consumer = connection.Consumer([tasks], callbacks=[lambda body, message: delivered.append(message)])
    consumer.qos(prefetch_count=1)
    consumer.consume()
    connection.drain_events(timeout=5)
    control = Queue("control", Exchange("control", type="fanout"), auto_delete=True)
    connection.Consumer([control], channel=connection.channel(), callbacks=[lambda body, message: None]).consume()
    default: Any = connection.default_channel
    default._brpop_start()
    redis.kill()
    return connection, delivered[0]


def test_closing_after_collect_raises_no_attribute_error_and_a_late_ack_is_a_connection_error(redis):
    connection, message = lose_redis_while_consuming(redis)
    # celery 5.7's Consumer.on_connection_error_after_connected does exactly this.
    connection.collect(socket_timeout=5)
    connection.close()  # raised AttributeError('hostname'): "Unrecoverable error", the worker exited
    # A task delivered before the loss and acked after it (its ack_log_error logs connection errors).
    with pytest.raises(connection.connection_errors) as raised:
        message.ack()
    assert isinstance(raised.value, OrphanedChannelError)


def test_kombu_still_needs_the_guard(redis, monkeypatch):
    """Without the guard the pinned kombu ends the worker. When this fails, kombu no
    longer does: drop ``guard_orphaned_redis_channels``."""
    channel: Any = kombu_redis.Channel
    monkeypatch.setattr(channel, "_connparams", channel._connparams.__wrapped__)
    connection, _ = lose_redis_while_consuming(redis)
    connection.collect(socket_timeout=5)
    with pytest.raises(AttributeError, match="hostname"):
        connection.close()


def _clients_built(monkeypatch) -> list[Any]:
    """Every ``redis.Redis`` built from here on."""
    built: list[Any] = []
    original = kombu_redis.redis.Redis.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(kombu_redis.redis.Redis, "__init__", counting)
    return built


def _publish_consume_and_ack(connection: Connection, queue: Queue, count: int) -> list[int]:
    with connection.Producer() as producer:
        for n in range(count):
            producer.publish({"n": n}, routing_key=queue.name, declare=[queue])
    seen: list[int] = []

    def take(body: Any, message: Any) -> None:
        seen.append(body["n"])
        message.ack()

    with connection.Consumer([queue], callbacks=[take]):
        while len(seen) < count:
            connection.drain_events(timeout=5)
    return seen


def test_a_channel_keeps_one_client_for_publishes_and_acks_and_a_new_pool_gets_a_new_one(redis, monkeypatch):
    connection = Connection(f"{redis.url}/0")
    queue = Queue("kept")
    assert _publish_consume_and_ack(connection, queue, 2) == [0, 1]  # the channel and its clients exist now
    built = _clients_built(monkeypatch)
    assert _publish_consume_and_ack(connection, queue, 20) == list(range(20))
    assert built == []  # 20 publishes and 20 acks (each ack a pipeline) on the client kept
    channel: Any = connection.default_channel
    kept = channel.__dict__["_kept_sync_client"]
    channel._disconnect_pools()  # what a fork does: a new pool next time
    assert _publish_consume_and_ack(connection, queue, 3) == [0, 1, 2]
    renewed = channel.__dict__["_kept_sync_client"]
    assert renewed is not kept and renewed.connection_pool is channel.pool
    connection.close()


def test_kombu_still_builds_a_client_per_command(redis, monkeypatch):
    """Without ``reuse_redis_clients`` the pinned kombu builds a Redis client for every
    publish and every ack. When this fails, kombu no longer does: drop the patch."""
    channel: Any = kombu_redis.Channel
    monkeypatch.setattr(channel, "conn_or_acquire", channel.conn_or_acquire.__wrapped__)
    connection = Connection(f"{redis.url}/0")
    queue = Queue("unkept")
    _publish_consume_and_ack(connection, queue, 2)
    built = _clients_built(monkeypatch)
    _publish_consume_and_ack(connection, queue, 5)
    assert len(built) >= 10  # one per publish, one per ack
    connection.close()
