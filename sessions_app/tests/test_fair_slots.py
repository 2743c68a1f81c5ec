"""Who gets a process's next free slot (a worker's database thread, a web request thread)
when every slot is taken: tenants in turn, not arrival order."""

from __future__ import annotations

import asyncio

import pytest

from sessions_app.fair_slots import FairSlots


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class Recorder:
    """Holds slots until told to let go, noting the order in which they were granted."""

    def __init__(self, slots: FairSlots) -> None:
        self.slots = slots
        self.granted: list[str] = []
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.done: dict[str, asyncio.Event] = {}

    def ask(self, tenant: str, name: str) -> None:
        done = self.done[name] = asyncio.Event()

        async def hold() -> None:
            async with self.slots.slot(tenant):
                self.granted.append(name)
                await done.wait()

        self.tasks[name] = asyncio.ensure_future(hold())

    async def finish(self, name: str) -> None:
        self.done[name].set()
        await self.tasks[name]
        await settle()

    async def finish_all(self) -> None:
        """Let go of the granted slots, oldest first, until nobody waits or holds one."""
        while not all(task.done() for task in self.tasks.values()):
            await self.finish(next(n for n in self.granted if not self.tasks[n].done()))


def test_a_newcomer_goes_before_the_backlog_of_a_tenant_that_holds_every_slot() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(capacity=2, share=0.5)
        r = Recorder(slots)
        for n in range(6):
            r.ask("flooder", f"a{n}")
        await settle()
        r.ask("other", "b0")
        await settle()
        assert r.granted == ["a0", "a1"]  # all taken; a2..a5 and b0 wait
        await r.finish("a0")
        assert r.granted[-1] == "b0"  # not a2, which came first
        await r.finish_all()
        return r.granted

    assert asyncio.run(scenario()) == ["a0", "a1", "b0", "a2", "a3", "a4", "a5"]


def test_waiting_tenants_take_turns() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(capacity=1, share=1.0)
        r = Recorder(slots)
        r.ask("x", "x0")
        await settle()
        for name in ("a0", "a1", "a2"):
            r.ask("a", name)
        for name in ("b0", "b1"):
            r.ask("b", name)
        r.ask("c", "c0")
        await settle()
        await r.finish_all()
        return r.granted

    assert asyncio.run(scenario()) == ["x0", "a0", "b0", "c0", "a1", "b1", "a2"]


def test_work_of_no_known_tenant_waits_its_turn_like_any_other() -> None:
    # A worker's first database call for a turn may not know the tenant yet (None).
    async def scenario() -> list[str]:
        slots = FairSlots(capacity=1, share=1.0)
        r = Recorder(slots)
        r.ask("a", "a0")
        await settle()
        r.ask(None, "n0")
        r.ask("a", "a1")
        await settle()
        await r.finish_all()
        return r.granted

    assert asyncio.run(scenario()) == ["a0", "n0", "a1"]


def test_a_lone_tenant_uses_every_slot() -> None:
    async def scenario() -> int:
        slots = FairSlots(capacity=4, share=0.25)
        r = Recorder(slots)
        for n in range(6):
            r.ask("alone", f"a{n}")
        await settle()
        return len(r.granted)

    assert asyncio.run(scenario()) == 4


def test_a_capped_share_leaves_slots_free_for_other_tenants() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        slots = FairSlots(capacity=4, share=0.5, capped=True)
        r = Recorder(slots)
        for n in range(5):
            r.ask("slow", f"a{n}")  # requests that hold their slot for seconds
        await settle()
        alone = list(r.granted)
        r.ask("other", "b0")
        r.ask("other", "b1")
        await settle()
        return alone, r.granted[len(alone) :]

    alone, then = asyncio.run(scenario())
    assert alone == ["a0", "a1"] and then == ["b0", "b1"]


def test_one_that_stops_waiting_loses_nothing_for_the_others() -> None:
    async def scenario() -> tuple[list[str], int]:
        slots = FairSlots(capacity=1, share=1.0)
        r = Recorder(slots)
        r.ask("a", "a0")
        r.ask("b", "b0")
        r.ask("c", "c0")
        await settle()
        r.tasks["b0"].cancel()  # a client that went away while its request waited
        await settle()
        await r.finish("a0")
        await r.finish("c0")
        return r.granted, slots.waiting

    granted, waiting = asyncio.run(scenario())
    assert granted == ["a0", "c0"] and waiting == 0


def test_a_slot_granted_as_its_waiter_is_cancelled_is_given_back() -> None:
    async def scenario() -> tuple[int, int, bool]:
        slots = FairSlots(capacity=1, share=1.0)
        await slots.acquire("a")
        waiter = asyncio.ensure_future(slots.acquire("b"))
        await settle()
        slots.release("a")  # grants b's slot ...
        waiter.cancel()  # ... and b is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await waiter
        late = asyncio.ensure_future(slots.acquire("c"))
        await settle()
        return slots.held_by("b"), slots.waiting, late.done()

    assert asyncio.run(scenario()) == (0, 0, True)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        FairSlots(capacity=0, share=0.5)


def test_work_that_outstays_step_aside_gives_its_slot_to_the_next() -> None:
    # A web request's running slot: one still running after ``step_aside`` is waiting on
    # something (a slow query, a long wait), so it stops counting and the next goes in.
    async def scenario() -> tuple[list[str], int]:
        slots = FairSlots(capacity=1, share=1.0, capped=True)
        granted: list[str] = []
        let_go = asyncio.Event()

        async def slow() -> None:
            async with slots.slot("a", step_aside=0.05):
                granted.append("slow")
                await let_go.wait()

        async def quick(name: str) -> None:
            async with slots.slot("b", step_aside=0.05):
                granted.append(name)

        holder = asyncio.ensure_future(slow())
        await settle()
        waiter = asyncio.ensure_future(quick("b0"))
        await settle()
        assert granted == ["slow"]  # b0 waits while the slow one may still be running
        await asyncio.wait_for(waiter, 1.0)  # ... until it steps aside
        let_go.set()
        await holder
        await quick("b1")  # the slot stepped aside from is not given back twice
        return granted, slots.waiting

    granted, waiting = asyncio.run(scenario())
    assert granted == ["slow", "b0", "b1"] and waiting == 0


def test_work_done_before_step_aside_gives_its_slot_back_once() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(capacity=1, share=1.0, capped=True)
        r = Recorder(slots)
        async with slots.slot("a", step_aside=0.01):
            r.ask("b", "b0")
            await settle()
            assert r.granted == []
        await settle()
        await asyncio.sleep(0.03)  # past the step-aside time: nothing more is released
        r.ask("c", "c0")
        await settle()
        granted = list(r.granted)
        await r.finish_all()
        return granted

    assert asyncio.run(scenario()) == ["b0"]
