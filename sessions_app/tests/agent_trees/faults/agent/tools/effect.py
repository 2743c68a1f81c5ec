import asyncio
import os
import signal
import uuid

from agents.sdk import ToolContext, tool


@tool(effect="write", timeout=60)
async def effect(ctx: ToolContext, key: str, hold: float = 0, die: bool = False, gate: str = "") -> str:
    """Make one external effect, recorded in the ledger: a run row (with this process's
    PID) each time it starts, and the effect, made once per call id (``ctx.call_id``
    is the idempotency key a retried call keeps).

    ``hold``: on the first run of a call, wait this long before the effect (a test
    kills the worker meanwhile); ``gate``: wait until the key ``gate/<gate>`` exists
    (a test opens it); ``die``: kill this process on every run (a poison call).
    """
    kv = ctx.host.kv
    await kv.put(f"ledger/run/{ctx.call_id}/{uuid.uuid4().hex}", {"pid": os.getpid(), "key": key})
    if die:
        os.kill(os.getpid(), signal.SIGKILL)
    if hold and len(await kv.list(f"ledger/run/{ctx.call_id}/")) == 1:
        await asyncio.sleep(hold)
    while gate and await kv.get(f"gate/{gate}") is None:
        await asyncio.sleep(0.05)
    await kv.put(f"ledger/effect/{ctx.call_id}", {"key": key})
    return f"did {key}"
