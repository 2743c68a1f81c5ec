"""channels/<name>.py holding github_channel(...): a pack channel, its warnings and its mistakes."""

from __future__ import annotations

import pytest

from agents.sdk import DefinitionError, github_channel
from agents.tests.trees import codes, only

PACK = """
    from agents.sdk import github_channel

    channel = github_channel({arguments})
"""


def test_a_signed_github_pack_is_a_channel_with_the_packs_default_handlers(build):
    surface = build({"agent/channels/github.py": PACK.format(arguments='secret="HOOK_SECRET", token="TOKEN"')})
    assert codes(surface) == []
    channel = surface.channels["github"].value
    assert channel.pack is not None and channel.pack.kind == "github" and channel.routes == ()
    assert set(channel.events) == {"turn.started", "message.completed", "turn.completed", "turn.failed"}


def test_a_github_pack_without_a_secret_is_a_warning(build):
    surface = build({"agent/channels/github.py": PACK.format(arguments='token="TOKEN"')})
    assert codes(surface) == ["agents.W041"]
    assert only(surface, "agents.W041").path == "agent/channels/github.py"
    assert "github" in surface.channels  # still served: unsigned deliveries are admitted


def test_authored_events_replace_the_packs_default_for_their_type():
    def on_completed(event, channel, ctx):
        return None

    channel = github_channel(secret="S", events={"turn.completed": on_completed})
    assert channel.events["turn.completed"] is on_completed and "turn.started" in channel.events


@pytest.mark.parametrize(
    "arguments",
    [
        {"progress": {"statuses": True}},
        {"repositories": ["acme"]},
        {"repositories": ["acme/app/extra"]},
        {"bot_name": "@agent"},
        {"on_event": "not a function"},
        {"api_url": "ftp://github.example"},
    ],
)
def test_a_github_pack_with_a_wrong_argument_fails_at_import(arguments):
    with pytest.raises(DefinitionError):
        github_channel(secret="S", **arguments)
