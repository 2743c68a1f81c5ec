"""Discovery: turning an agent folder into its surface (see ``discover_agent``).

Importable without Django, like ``agents.sdk``.
"""

from __future__ import annotations

from pathlib import Path

from agents.discovery.diagnostics import Diagnostic, Severity
from agents.discovery.discover import discover_agent
from agents.discovery.extensions import mount_extensions
from agents.discovery.loader import TreeLoader, tree_fingerprint
from agents.discovery.surface import FILE_TOOLS, AgentSurface, ExtensionInfo, extension_context
from agents.events import EventType
from agents.runtime.outbound import OutboundPolicy

KNOWN_EVENTS = frozenset(str(event) for event in EventType)


def discover(
    folder: Path, slug: str | None = None, *, outbound: OutboundPolicy | None = None
) -> tuple[AgentSurface, TreeLoader]:
    """Discover the agent in ``folder`` (which holds ``agent/``); slug defaults to the folder
    name; MCP URLs are checked against ``outbound`` (default: public https only)."""
    return discover_agent(
        folder, slug or folder.name, known_events=KNOWN_EVENTS, mount_extensions=mount_extensions, outbound=outbound
    )


__all__ = [
    "FILE_TOOLS",
    "AgentSurface",
    "Diagnostic",
    "ExtensionInfo",
    "Severity",
    "TreeLoader",
    "discover",
    "extension_context",
    "tree_fingerprint",
]
