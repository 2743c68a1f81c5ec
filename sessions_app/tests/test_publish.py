"""A task sent now through Redis is written in one command (``sessions_app.publish``):
the message must be the one ``apply_async`` writes, so Celery's workers run it as
before (every live-worker test runs its turns from such messages)."""

from __future__ import annotations

import base64
import json
import os
import uuid
from typing import Any

import pytest
import redis
from celery import Celery
from kombu.exceptions import OperationalError

from agent_platform import request_ids
from agent_platform.celery import app as platform_app
from sessions_app.publish import can_publish, publish

# The platform's Celery settings (time limits, results ignored, JSON), with the Redis the
# test suite runs beside as the broker, whatever broker this process was configured with.
app = Celery("publish-test", set_as_current=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(broker_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


@app.task(name="publish-test.run_turn", bind=True, acks_late=True, reject_on_worker_lost=True)
def run_turn(self: Any, turn_id: str, tenant_id: int) -> None:
    """Sent, never run: the tests read its messages off Redis."""


# What differs between any two messages: their ids, and the queue each was sent to.
PER_MESSAGE = {"id", "root_id", "correlation_id", "delivery_tag", "delivery_info"}


def _sent_to(queue: str) -> dict[str, Any]:
    raw = redis.Redis.from_url(str(app.conf.broker_url)).rpop(queue)
    assert isinstance(raw, bytes), f"nothing on {queue}"
    message: dict[str, Any] = json.loads(raw)
    message["body"] = json.loads(base64.b64decode(message["body"]))
    return message


def _without_ids(part: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in part.items() if key not in PER_MESSAGE}


def test_the_message_is_the_one_apply_async_writes():
    task = run_turn
    by_celery, by_us = f"publish-test-{uuid.uuid4().hex[:8]}", f"publish-test-{uuid.uuid4().hex[:8]}"
    assert can_publish(app)
    token = request_ids.enter("req-publish-test")
    try:
        task.apply_async(("turn-1", 7), queue=by_celery)
        publish(app, task, by_us, ("turn-1", 7))
    finally:
        request_ids.restore(token)
    celerys, ours = _sent_to(by_celery), _sent_to(by_us)

    assert ours.keys() == celerys.keys()
    assert (
        ours["body"]
        == celerys["body"]
        == [["turn-1", 7], {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}]
    )
    assert _without_ids(ours["headers"]) == _without_ids(celerys["headers"])
    assert ours["headers"]["platform_request_id"] == "req-publish-test"  # the request id rides along
    assert ours["headers"]["timelimit"] == [task.time_limit, task.soft_time_limit]
    assert _without_ids(ours["properties"]) == _without_ids(celerys["properties"])
    assert ours["properties"]["delivery_info"] == {"exchange": "", "routing_key": by_us}
    assert ours["headers"]["id"] == ours["headers"]["root_id"] == ours["properties"]["correlation_id"]


def test_a_broker_that_cannot_be_reached_raises_what_apply_async_raises():
    unreachable = Celery("publish-test", set_as_current=False)
    unreachable.config_from_object({"broker_url": "redis://127.0.0.1:1/0", "task_serializer": "json"})

    @unreachable.task(name="publish-test.noop")
    def noop() -> None:
        pass

    assert can_publish(unreachable)
    with pytest.raises(OperationalError, match=r"cannot send publish-test\.noop"):
        publish(unreachable, noop, "publish-test-nowhere", ())


def test_tasks_run_in_the_callers_thread_go_through_apply_async():
    platform_app.conf.task_always_eager = True
    try:
        assert not can_publish(platform_app)
    finally:
        platform_app.conf.task_always_eager = False
    memory = Celery("publish-test-memory", set_as_current=False)
    memory.config_from_object({"broker_url": "memory://localhost/"})
    assert not can_publish(memory)  # the embedded form's broker
