"""The Slack pack, its Web API at the tests' fake Slack (``SLACKER_API_URL``, set by
sessions_app/tests/triggers/slack/conftest.py before the worker starts)."""

import os

from agents.sdk import slack_channel

channel = slack_channel(
    signing_secret="SLACKER_SIGNING_SECRET",
    bot_token="SLACKER_BOT_TOKEN",
    api_url=os.environ.get("SLACKER_API_URL", "https://slack.com/api"),
)
