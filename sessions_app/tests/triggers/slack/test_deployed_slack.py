"""A deployed agent's Slack pack works as a folder agent's does. Its tree runs in the
sandbox, and the pack's default reply (the sdk's own handler) is named by the runner and
run by the platform, with the bot token it resolves. A sandboxed tool's
``ctx.host.slack`` posts through the platform too; the token never enters the runner.
Driven end to end: a signed Events API delivery, the turn on the live worker, the posts
on the local Slack."""

from __future__ import annotations

import json
import os
import time

import pytest
from rest_framework.test import APIClient

from agents.sandbox import bwrap_path
from agents.secrets import set_secret
from agents.tests.deploying import deployed_agent
from agents.tests.trees import write_tree
from sessions_app.tests.triggers.slack.slack_fake import BOT_TOKEN, SIGNING_SECRET, event_callback, sign

pytestmark = pytest.mark.django_db(transaction=True)

CHANNEL = """
from agents.sdk import slack_channel

channel = slack_channel(signing_secret="SLACK_SIGNING_SECRET", bot_token="SLACK_BOT_TOKEN", api_url={api_url!r})
"""

ANNOUNCE = '''
import os

from agents.sdk import ToolContext, tool


@tool
async def announce(ctx: ToolContext, channel: str, text: str) -> str:
    """Post to a Slack channel through ctx.host.slack; says whether the token reached here."""
    answer = await ctx.host.slack.post_message(channel, text)
    return f"{answer['ts']} token here: {any(v.startswith('xoxb-') for v in os.environ.values())}"
'''


@pytest.fixture
def deployed_slack(live, alice, tmp_path):
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap (apt-get install bubblewrap)")
    folder = tmp_path / "deployed-slack"
    write_tree(
        folder,
        {
            "agent/instructions.md": "A deployed agent answering Slack threads.",
            "agent/channels/slack.py": CHANNEL.format(api_url=os.environ["SLACKER_API_URL"]),
            "agent/tools/announce.py": ANNOUNCE,
        },
    )
    agent = deployed_agent(alice.tenant, "deployed-slack", folder)
    set_secret(agent, "SLACK_SIGNING_SECRET", SIGNING_SECRET)
    set_secret(agent, "SLACK_BOT_TOKEN", BOT_TOKEN)
    live(alice, "deployed-slack")
    return agent


def say(text: str, channel: str, ts: str) -> dict:
    body = json.dumps(event_callback(f"Ev{time.time_ns()}", channel=channel, text=text, ts=ts)).encode()
    answer = APIClient().generic(
        "POST", "/deployed-slack/v1/channels/slack/events", body, content_type="application/json", **sign(body)
    )
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_deployed_agent_answers_in_the_thread_and_its_tool_posts_through_the_platform(deployed_slack, fake_slack):
    say("<@U0BOT> hello", channel="CDEPLOYED", ts="300.0001")
    [reply] = fake_slack.wait_for_posts("CDEPLOYED")
    assert reply["authorization"] == f"Bearer {BOT_TOKEN}"
    assert reply["body"] == {"channel": "CDEPLOYED", "thread_ts": "300.0001", "text": "echo: hello"}

    call = json.dumps({"channel": "CDEPLOYEDANNOUNCE", "text": "release at noon"})
    say(f"<@U0BOT> /call announce {call}", channel="CDEPLOYED2", ts="301.0001")
    [announced] = fake_slack.wait_for_posts("CDEPLOYEDANNOUNCE")
    assert announced["body"] == {"channel": "CDEPLOYEDANNOUNCE", "text": "release at noon"}
    assert announced["authorization"] == f"Bearer {BOT_TOKEN}"
    [answer] = fake_slack.wait_for_posts("CDEPLOYED2")
    assert answer["body"]["thread_ts"] == "301.0001", answer
    assert "token here: False" in answer["body"]["text"], answer
