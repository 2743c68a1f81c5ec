import os
import uuid

from agents.sdk import ToolContext, tool


@tool(effect="write", needs_approval=True)
async def guarded_effect(ctx: ToolContext, key: str) -> str:
    """Like ``effect``, after a person's approval."""
    kv = ctx.host.kv
    await kv.put(f"ledger/run/{ctx.call_id}/{uuid.uuid4().hex}", {"pid": os.getpid(), "key": key})
    await kv.put(f"ledger/effect/{ctx.call_id}", {"key": key})
    return f"did {key}"
