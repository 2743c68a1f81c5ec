"""``tasks``: a second GitHub pack whose ``on_event`` turns a finished workflow run into a
task session of its own, raises on a check suite and ignores everything else (no secret: ``agents.W041``)."""

import os
from typing import Any

from agents.sdk import ChannelContext, github_channel


def on_event(event_name: str, payload: dict[str, Any], ctx: ChannelContext) -> dict[str, str] | None:
    if event_name == "check_suite":
        raise RuntimeError("the check suite confused on_event")
    if event_name == "workflow_run":
        return {"task": f"Explain why {payload['workflow_run']['name']} {payload['workflow_run']['conclusion']}."}
    return None


channel = github_channel(
    token="HUBBOT_TOKEN",
    api_url=os.environ.get("HUBBOT_GITHUB_API", "https://api.github.com"),
    bot_name="hubbot",
    on_event=on_event,
)
