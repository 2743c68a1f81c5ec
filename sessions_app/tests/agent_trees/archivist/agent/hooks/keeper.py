from typing import Any

from agents.sdk import HookContext, define_hook


async def keep_last_reply(event: dict[str, Any], ctx: HookContext) -> None:
    """The latest reply as one note, updated in place after every turn."""
    await ctx.artifacts.tag("last-reply.txt", event["data"]["result"], kind="note")


hook = define_hook(events={"turn.completed": keep_last_reply})
