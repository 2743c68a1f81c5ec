"""The open-streams quota: how many event streams (NDJSON and WebSocket) a tenant holds
open at once, across every web process.

Each open stream is a member of its tenant's Redis sorted set, scored with the time it
expires; one Lua script drops the expired members, counts the rest and adds the new
one only under the cap (a script runs alone in Redis, so two processes can never both
take the last place). An open stream renews its expiry every ``HEARTBEAT`` seconds and
leaves the set when it ends, so a process that dies holding streams gives their places
back within ``TTL`` seconds rather than never. Redis rather than Postgres: a stream is
held for hours, and its place is a signal, not a record (nothing is lost with it).

The embedded form (no Redis) has one process: the same sets in a dict under a lock. With Redis
unreachable a stream is let through (the stream itself tells its caller about Redis).

Example::

    slot = open_stream(tenant)            # QuotaExceeded at the cap
    async with holding(slot):             # renews it; gives it back at the end
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
from django.conf import settings

from agent_platform.conf import platform_settings
from agent_platform.models import Tenant
from sessions_app.quotas import Limits, QuotaExceeded, enabled

logger = logging.getLogger(__name__)

TTL = 60.0
HEARTBEAT = TTL / 3
RETRY_SECONDS = 10
KEY_PREFIX = "platform:streams:"

# KEYS[1]: the tenant's set; ARGV: now, expiry, cap, member. 1: taken, 0: at the cap.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) - tonumber(ARGV[1])) + 1)
return 1
"""

# The embedded form's sets: tenant id → {member: expiry}.
_local: defaultdict[int, dict[str, float]] = defaultdict(dict)
_local_lock = threading.Lock()


@dataclass(frozen=True)
class StreamSlot:
    """One open stream's place in its tenant's count (``member`` None: not counted)."""

    tenant_id: int
    member: str | None


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)


@cache
def _take_script(url: str) -> Any:
    # Sent by its SHA (EVALSHA), the body only when Redis does not know it yet.
    return _client(url).register_script(_TAKE)


def _url() -> str:
    return str(platform_settings.DOORBELL_REDIS_URL)


def open_stream(tenant: Tenant) -> StreamSlot:
    """Take a place for one more open stream of ``tenant``.

    Raises:
        QuotaExceeded: the tenant holds its ``max_open_streams`` already.
    """
    if not enabled():
        return StreamSlot(tenant.pk, None)
    cap = Limits.of(tenant).open_streams
    member = secrets.token_hex(8)
    url = _url()
    now = time.time()
    if not url:
        with _local_lock:
            held = _local[tenant.pk]
            for expired in [m for m, expiry in held.items() if expiry <= now]:
                del held[expired]
            taken = len(held) < cap
            if taken:
                held[member] = now + TTL
    else:
        try:
            taken = bool(_take_script(url)(keys=[_key(tenant.pk)], args=[now, now + TTL, cap, member]))
        except redis.RedisError as error:
            logger.warning("cannot count open streams (%s); this one is let through", error)
            return StreamSlot(tenant.pk, None)
    if not taken:
        raise QuotaExceeded(
            f"This tenant has {cap} event streams open, its cap; close one or retry later.",
            retry_after=RETRY_SECONDS,
        )
    return StreamSlot(tenant.pk, member)


def release(slot: StreamSlot) -> None:
    """Give the stream's place back (once; a second call does nothing harmful)."""
    if slot.member is None:
        return
    url = _url()
    if not url:
        with _local_lock:
            _local[slot.tenant_id].pop(slot.member, None)
        return
    try:
        _client(url).zrem(_key(slot.tenant_id), slot.member)
    except redis.RedisError as error:
        logger.warning("cannot release an open stream's place (%s); it expires in %s s", error, TTL)


def _renew(slot: StreamSlot) -> None:
    if slot.member is None:
        return
    if not _url():
        with _local_lock:
            held = _local[slot.tenant_id]
            if slot.member in held:
                held[slot.member] = time.time() + TTL
        return
    try:
        _client(_url()).zadd(_key(slot.tenant_id), {slot.member: time.time() + TTL}, xx=True)
    except redis.RedisError as error:
        logger.warning("cannot renew an open stream's place (%s)", error)


def open_streams(tenant_id: int) -> int:
    """The tenant's open streams now (for the dashboard)."""
    url = _url()
    if not url:
        now = time.time()
        with _local_lock:
            return sum(1 for expiry in _local[tenant_id].values() if expiry > now)
    try:
        return int(_client(url).zcount(_key(tenant_id), time.time(), "+inf"))
    except redis.RedisError:
        return 0


@contextlib.asynccontextmanager
async def holding(slot: StreamSlot) -> AsyncIterator[None]:
    """Keep ``slot`` while the body runs (renewing it), and give it back after."""
    renewer = asyncio.ensure_future(_keep(slot)) if slot.member is not None else None
    try:
        yield
    finally:
        if renewer is not None:
            renewer.cancel()
        await asyncio.to_thread(release, slot)


async def _keep(slot: StreamSlot) -> None:
    while True:
        await asyncio.sleep(HEARTBEAT)
        await asyncio.to_thread(_renew, slot)


def _key(tenant_id: int) -> str:
    # The database's name too: deployments (and test runs) may share one Redis.
    return f"{KEY_PREFIX}{settings.DATABASES['default']['NAME']}:{tenant_id}"
