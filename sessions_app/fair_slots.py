"""Slots of a process shared fairly between tenants: who goes next when all are taken.

A process that does many tenants' work at once (the web process's request threads, a
worker's database threads) runs a few pieces of it at a time; the rest wait. In arrival
order, one tenant with sixteen requests in flight puts sixteen in front of another's
one, and that one waits for all of them. Here the waiting are queued per tenant and
served in turn, one tenant after the other; a free slot goes first to a waiting tenant
that holds less than its share of them, so a tenant that took every slot while alone
gives the next free one to a newcomer. Where one piece of work may hold its slot for
seconds (a web request waiting on something), the share is a cap instead: the slots a
tenant may not take stay free for the others.

One event loop only: ``acquire`` and ``release`` run on the loop that owns the slots.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager

_NOBODY = object()  # no waiting tenant may take a slot (None is a tenant: one not known yet)


class FairSlots:
    """``capacity`` slots for tenants (any hashable key), served in turn. A free slot goes
    first to a waiting tenant holding less than ``share`` of them; with ``capped``, a
    tenant never holds more than that share, even alone (the rest stay free for others:
    for slots a request may hold for seconds)."""

    def __init__(self, capacity: int, share: float, capped: bool = False) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.per_tenant = max(1, int(capacity * share))
        self.capped = capped
        self._held: Counter[Hashable] = Counter()
        self._in_use = 0
        # The tenants with someone waiting, in the order they are next served.
        self._waiting: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()

    @asynccontextmanager
    async def slot(self, tenant: Hashable, step_aside: float | None = None) -> AsyncIterator[Callable[[], None]]:
        """A slot while inside. With ``step_aside`` (seconds), work still inside after
        that long gives its slot back and goes on without one: for slots that bound the
        work running at once, where work that takes that long is waiting on something.
        Yields what gives the slot back at once (on this loop; harmless more than once),
        for work that knows it is about to wait."""
        await self.acquire(tenant)
        held = True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                self.release(tenant)

        timer = asyncio.get_running_loop().call_later(step_aside, give_back) if step_aside is not None else None
        try:
            yield give_back
        finally:
            if timer is not None:
                timer.cancel()
            give_back()

    async def acquire(self, tenant: Hashable) -> None:
        if not self._waiting and self._in_use < self.capacity and self._may_take(tenant):
            self._take(tenant)
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(granted)
        self._hand_out()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release(tenant)  # given a slot just as it stopped waiting
            else:
                self._forget(tenant, granted)
            raise

    def release(self, tenant: Hashable) -> None:
        self._held[tenant] -= 1
        if self._held[tenant] <= 0:
            del self._held[tenant]
        self._in_use -= 1
        self._hand_out()

    def held_by(self, tenant: Hashable) -> int:
        return self._held[tenant]

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._waiting.values())

    def _may_take(self, tenant: Hashable) -> bool:
        return not self.capped or self._held[tenant] < self.per_tenant

    def _take(self, tenant: Hashable) -> None:
        self._held[tenant] += 1
        self._in_use += 1

    def _hand_out(self) -> None:
        """Give free slots to the waiting, one tenant after another."""
        while self._in_use < self.capacity and self._waiting:
            tenant = self._next_tenant()
            if tenant is _NOBODY:
                return  # every waiting tenant holds its capped share
            queue = self._waiting.pop(tenant)
            granted = queue.popleft()
            if queue:
                self._waiting[tenant] = queue  # to the back of the line
            if not granted.done():
                self._take(tenant)
                granted.set_result(None)

    def _next_tenant(self) -> Hashable:
        """The first waiting tenant in line that holds less than its share; when every
        waiting tenant holds its share, the first in line (so a slot never idles), or
        nobody when the share is a cap."""
        for tenant in self._waiting:
            if self._held[tenant] < self.per_tenant:
                return tenant
        return _NOBODY if self.capped else next(iter(self._waiting))

    def _forget(self, tenant: Hashable, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is None:
            return
        try:
            queue.remove(granted)
        except ValueError:
            pass
        if not queue:
            del self._waiting[tenant]
        self._hand_out()
