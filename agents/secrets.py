"""Secrets by name (DESIGN §9.8): what a pack's or a connection's config names
(``slack_channel(signing_secret="SLACK_SIGNING_SECRET")``) resolves to, looked up on each
use so that a secret set after start works on the next call. Never log a value.

For an ``AGENTS_DIR`` agent the value is the environment variable ``NAME``, else the
contents of the file named by ``NAME_FILE`` (Docker secrets). Secrets stored per agent
arrive with tenant deployments; until then a deployed agent resolves none.
"""

from __future__ import annotations

import os
from pathlib import Path

from agents.models import Agent


def resolve_secret(agent: Agent, name: str) -> str | None:
    """The value of the secret ``name`` for ``agent``, or None when it is not set."""
    if not name or not agent.is_shared:
        return None
    value = os.environ.get(name)
    if value:
        return value
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip() or None
        except OSError:
            return None
    return None
