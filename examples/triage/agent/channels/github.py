"""GitHub: a pull request, a comment mentioning @triage, or a finished CI run wakes the
agent in the PR's own session (one per pull request). Set-up: `python manage.py agent
github help`; the secrets are read by name (environment, or NAME_FILE)."""

from agents.sdk import github_channel

channel = github_channel(
    secret="GITHUB_WEBHOOK_SECRET",  # noqa: S106 -- the names of secrets, not their values
    token="GITHUB_TOKEN",  # noqa: S106
    bot_name="triage",
)
