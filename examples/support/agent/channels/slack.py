"""Support in Slack: mention the app in a channel, or DM it; it answers in the thread.
Set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN (see docs/slack.md, or
`python manage.py agent slack help`)."""

from agents.sdk import slack_channel

# Secrets are given by name; the platform reads their values from the environment.
channel = slack_channel(signing_secret="SLACK_SIGNING_SECRET", bot_token="SLACK_BOT_TOKEN")  # noqa: S106
