"""``agent github help``: how to point a GitHub webhook (and token) at an agent's GitHub pack."""

from __future__ import annotations

from pathlib import Path

from agents.config import outbound_policy
from agents.discovery import discover
from agents.registry import agent_folders

EVENTS = ("Pull requests", "Issue comments", "Pull request review comments", "Check suites", "Workflow runs")
PERMISSIONS = ("Checks: read and write", "Pull requests: read and write", "Issues: read and write")


def pack_channels(agents_dir: Path) -> list[tuple[str, str, dict[str, object]]]:
    """``(slug, channel, options)`` of every GitHub pack channel in ``agents_dir``."""
    found = []
    for slug, folder in agent_folders(agents_dir).items():
        surface, loader = discover(folder, slug, outbound=outbound_policy())
        loader.unload()
        for name, entry in surface.channels.items():
            pack = entry.value.pack
            if pack is not None and pack.kind == "github":
                found.append((slug, name, dict(pack.options)))
    return found


def setup_help(agents_dir: Path, base_url: str) -> str:
    """The set-up steps, with the payload URL of each agent that has the pack."""
    base = base_url.rstrip("/")
    lines = ["GitHub pack set-up (repository or organization Settings > Webhooks > Add webhook):", ""]
    channels = pack_channels(agents_dir)
    if not channels:
        lines += [f"No agent in {agents_dir} has a github_channel(...) yet (channels/github.py).", ""]
    for slug, name, options in channels:
        secret = options.get("secret") or "(none: deliveries are unsigned; agent validate warns)"
        lines += [
            f"Agent {slug!r}, channel {name!r}:",
            f"  Payload URL:   {base}/{slug}/v1/channels/{name}/webhook",
            "  Content type:  application/json",
            f"  Secret:        the value of the platform secret {secret}",
            f"  Mention:       @{options.get('bot_name')} in a PR comment wakes the agent",
            f"  Token secret:  {options.get('token') or '(none: API calls are unauthenticated)'}",
            "",
        ]
    lines += [
        "Events to subscribe (Let me select individual events):",
        *(f"  - {event}" for event in EVENTS),
        "",
        "Token (a GitHub App installation token or a fine-grained token) permissions:",
        *(f"  - {permission}" for permission in PERMISSIONS),
        "Check runs need a GitHub App; with a personal token, turn them off:",
        '  github_channel(..., progress={"commit_status": False})',
        "",
        "Set both secrets where the platform reads them (environment variable NAME or a file",
        "named by NAME_FILE), and let outbound calls reach api_url.",
    ]
    return "\n".join(lines) + "\n"
