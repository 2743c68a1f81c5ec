"""``manage.py agent slack help`` tells how to set up the Slack app, and the request URL
of each agent with a Slack pack (the support example has one)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from django.core.management import call_command

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_slack_help_prints_the_scopes_events_and_each_request_url(settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": EXAMPLES}
    out = StringIO()

    call_command("agent", "slack", "help", "--base-url", "https://agents.example.com/", stdout=out)

    text = out.getvalue()
    for scope in ("app_mentions:read", "chat:write", "im:history"):
        assert scope in text
    assert "app_mention" in text and "message.im" in text
    assert "Request URL: https://agents.example.com/support/v1/channels/slack/events" in text
    assert "SLACK_SIGNING_SECRET" in text and "SLACK_BOT_TOKEN" in text
    assert "weather" not in text  # no Slack pack there
