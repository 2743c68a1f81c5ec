"""A task's message, written to its Redis queue in one command.

Celery's ``apply_async`` builds a message through several layers (the task's options,
the router, kombu's producer and its retry wrapper, the channel): 0.57 ms of CPU per
call on a small machine, six times the Redis command it ends in, and a web process
sends one for every turn it accepts (this: 0.18 ms). ``publish`` writes the same
message, Celery's task protocol 2 in kombu's Redis envelope as ``apply_async`` writes it
(``task_message``), with one ``LPUSH`` to the queue's list, where kombu's Redis
transport puts it. Celery's workers read it like any other: the task runs, acks late,
retries and keeps its time limits as before.

Only for a task sent now (no countdown) through a plain ``redis://`` broker with
Celery's defaults for its keys and encoding (``can_publish``); everything else (TLS
brokers included, whose options kombu applies) goes through ``apply_async``
(``sessions_app.queues.send`` chooses).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import socket
import uuid
from typing import Any

import redis
from celery import Celery, Task
from celery.signals import after_task_publish, before_task_publish
from kombu.exceptions import OperationalError
from redis.backoff import NoBackoff
from redis.retry import Retry

# The body's third part: no callbacks, errbacks, chain or chord.
_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def can_publish(app: Celery) -> bool:
    """Whether ``publish`` writes what ``apply_async`` would for this app: a plain Redis
    broker with kombu's key names, JSON messages of protocol 2, tasks not run in the caller."""
    return _redis_broker_with_defaults(app) and not app.conf.task_always_eager


@functools.cache
def _redis_broker_with_defaults(app: Celery) -> bool:
    # Read once per process: Celery's settings cost microseconds per read, and these are
    # fixed when the app is configured (task_always_eager is switched by tests, so read live).
    conf = app.conf
    return (
        str(conf.broker_url).startswith("redis://")
        and not conf.broker_use_ssl
        and "global_keyprefix" not in (conf.broker_transport_options or {})
        and conf.task_protocol == 2
        and conf.task_serializer == "json"
        and conf.task_compression is None
    )


def task_message(app: Celery, task: Task, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The message ``task.apply_async(args, queue=queue)`` sends, its body not yet encoded:
    Celery's headers and body in kombu's envelope
    (https://docs.celeryq.dev/en/stable/internals/protocol.html)."""
    task_id = str(uuid.uuid4())
    headers: dict[str, Any] = {
        "lang": "py",
        "task": task.name,
        "id": task_id,
        "shadow": None,
        "eta": None,
        "expires": None,
        "group": None,
        "group_index": None,
        "retries": 0,
        "timelimit": [task.time_limit, task.soft_time_limit],
        "root_id": task_id,
        "parent_id": None,
        "argsrepr": repr(args)[:1024],
        "kwargsrepr": "{}",
        "origin": f"gen{os.getpid()}@{_hostname()}",
        "ignore_result": task.ignore_result,
        "replaced_task_nesting": 0,
        "stamped_headers": None,
        "stamps": {},
    }
    return {
        "body": [list(args), {}, _EMBED],
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            "correlation_id": task_id,
            "reply_to": app.thread_oid,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": task.priority or 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }


def publish(app: Celery, task: Task, queue: str, args: tuple[Any, ...]) -> None:
    """Put the task's message on ``queue`` now.

    Raises:
        kombu.exceptions.OperationalError: the broker cannot be reached (as ``apply_async``
            raises it).
    """
    message = task_message(app, task, queue, args)
    headers, body = message["headers"], message["body"]
    # Celery's publish signals, as apply_async sends them: their receivers add headers
    # (the request id: agent_platform.celery) and see the message go.
    route = {"exchange": "", "routing_key": queue}
    before_task_publish.send(
        sender=task.name,
        body=body,
        declare=[],
        headers=headers,
        properties=message["properties"],
        retry_policy={},
        **route,
    )
    message["body"] = base64.b64encode(json.dumps(body).encode()).decode()
    try:
        _broker(app).lpush(queue, json.dumps(message))
    except redis.RedisError as error:
        raise OperationalError(f"cannot send {task.name} to {queue}: {error}") from error
    after_task_publish.send(sender=task.name, body=body, headers=headers, **route)


@functools.cache
def _broker(app: Celery) -> redis.Redis:
    # One retry: a pooled connection Redis dropped (a restart) is replaced once, and a
    # broker that is down fails the call at once, as apply_async's retries would soon.
    url = str(app.conf.broker_url)
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5, retry=Retry(NoBackoff(), 1))


@functools.cache
def _hostname() -> str:
    return socket.gethostname()
