"""The almanac: a small MCP server over stdio, started by the platform for the
``almanac`` connection (``mcp-connections/almanac.py``) in the agent's folder.

It is a plain script using the official ``mcp`` package; ``lib/`` is never
discovered, so it is not mistaken for agent code. Its one tool reaches the model
as ``almanac__sun_times``.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

SUN = {
    "lyon": ("07:48", "17:02"),
    "new york": ("06:58", "16:29"),
    "oslo": ("08:46", "15:15"),
    "tokyo": ("06:31", "16:29"),
}

server = MCPServer("almanac")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def sun_times(city: str) -> dict[str, str]:
    """Sunrise and sunset today (local time) for a city the almanac covers."""
    found = SUN.get(city.strip().lower())
    if found is None:
        return {"city": city, "error": f"no almanac data; covered: {', '.join(sorted(SUN))}"}
    return {"city": city, "sunrise": found[0], "sunset": found[1]}


if __name__ == "__main__":
    server.run()
