"""The labeller: a small stdio MCP server for host code only
(``host-connections/labels.py``); the model never sees its tools. The
``labels`` hook asks it for labels for every report the agent receives.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

KEYWORDS = {
    "auth": ("login", "password", "sign in", "token"),
    "billing": ("invoice", "charge", "refund", "payment"),
    "crash": ("crash", "exception", "500", "broken"),
    "performance": ("slow", "timeout", "latency"),
}

server = MCPServer("labels")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def suggest(text: str) -> dict[str, list[str]]:
    """Labels for an issue report, from keywords in its text."""
    lowered = text.lower()
    labels = [label for label, words in KEYWORDS.items() if any(word in lowered for word in words)]
    return {"labels": labels or ["needs-triage"]}


if __name__ == "__main__":
    server.run()
