"""``labels``: a host-only MCP server (stdio, kept in ``lib/``). Host code calls it as
``await ctx.host.mcp.call("labels", "suggest", {...})``; the model never sees it."""

import sys

from agents.sdk import define_mcp_connection

connection = define_mcp_connection(
    command=sys.executable, args=["agent/lib/labels_server.py"], description="Keyword labels.", timeout=10
)
