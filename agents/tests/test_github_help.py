"""``agent github help``: the webhook set-up, with the payload URL of each agent with the pack."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command


def test_github_help_prints_each_packs_payload_url_events_and_permissions(live_agents_dir, settings):
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    out = StringIO()

    call_command("agent", "github", "help", "--url", "https://agents.example.com/", stdout=out)

    printed = out.getvalue()
    assert "Payload URL:   https://agents.example.com/triage/v1/channels/github/webhook" in printed
    assert "Payload URL:   https://agents.example.com/hubbot/v1/channels/tasks/webhook" in printed
    assert "Content type:  application/json" in printed
    assert "GITHUB_WEBHOOK_SECRET" in printed
    for needed in ["Pull requests", "Issue comments", "Check suites", "Checks: read and write", "Issues: read"]:
        assert needed in printed
