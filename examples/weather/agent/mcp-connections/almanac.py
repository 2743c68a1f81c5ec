"""``almanac``: sunrise and sunset from a stdio MCP server kept in ``lib/``.

The platform starts it in the agent folder (so the path is relative to it), keeps it
running for the worker's turns, and offers its tools to the model as
``almanac__<tool>``. ``sys.executable`` is the platform's own Python, which has ``mcp``.
"""

import sys

from agents.sdk import define_mcp_connection

connection = define_mcp_connection(
    command=sys.executable,
    args=["agent/lib/almanac_server.py"],
    description="Sunrise and sunset times.",
    tools=["sun_times"],
    timeout=10,
)
