"""``slack_channel(...)`` is a pack channel: secrets by name, and authored ``events``
handlers replace the pack's defaults one event type at a time."""

from __future__ import annotations

import pytest

from agents.sdk import Channel, DefinitionError, slack_channel


def test_a_slack_channel_is_the_slack_pack_with_its_default_replies():
    channel = slack_channel(signing_secret="SLACK_SIGNING_SECRET", bot_token="SLACK_BOT_TOKEN")

    assert isinstance(channel, Channel)
    assert channel.pack is not None and channel.pack.kind == "slack"
    assert channel.pack.options == {
        "signing_secret": "SLACK_SIGNING_SECRET",
        "bot_token": "SLACK_BOT_TOKEN",
        "api_url": "https://slack.com/api",
    }
    assert set(channel.events) == {"message.completed", "turn.failed"}
    assert channel.routes == ()


def test_an_authored_handler_replaces_the_default_for_its_event_type_only():
    def mine(event, channel, ctx):
        return None

    default = slack_channel(signing_secret="S", bot_token="B").events
    channel = slack_channel(signing_secret="S", bot_token="B", events={"message.completed": mine})

    assert channel.events["message.completed"] is mine
    assert channel.events["turn.failed"] is default["turn.failed"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"signing_secret": "", "bot_token": "B"},
        {"signing_secret": "S", "bot_token": None},
        {"signing_secret": "S", "bot_token": "B", "api_url": "slack.com/api"},
        {"signing_secret": "S", "bot_token": "B", "events": {"message.completed": "not a function"}},
    ],
    ids=["empty-secret-name", "no-token-name", "api-url-not-http", "handler-not-callable"],
)
def test_a_wrong_argument_fails_at_definition(arguments):
    with pytest.raises(DefinitionError):
        slack_channel(**arguments)
