"""A small MCP server for the tests, over stdio (default) or streamable HTTP (``--http HOST PORT``).

Tools: ``echo`` (text back, structured), ``shout`` (text content only), ``fail`` (an
``isError`` result), ``crash`` (the process exits mid-call), ``hang`` (never answers), ``nap`` (sleeps, cancellably),
``whoami`` (the process id, the working directory and the ``TOOLBOX_TOKEN`` variable).
``TOOLBOX_START_DELAY`` (seconds) makes it slow to start, as a server with heavy imports is.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("toolbox")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> dict[str, str]:
    """Echo the text back."""
    return {"echo": text}


@server.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"failing on purpose: {reason}")


@server.tool()
def crash() -> str:
    """Exits the server mid-call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answers (blocks the server)."""
    time.sleep(3600)
    return "never"


@server.tool()
async def nap(seconds: float) -> str:
    """Sleeps (cancellably), then answers."""
    await anyio.sleep(seconds)
    return "rested"


@server.tool()
def whoami() -> dict[str, Any]:
    """The server's process id, working directory and TOOLBOX_TOKEN."""
    return {"pid": os.getpid(), "cwd": os.getcwd(), "token": os.environ.get("TOOLBOX_TOKEN")}


if __name__ == "__main__":
    time.sleep(float(os.environ.get("TOOLBOX_START_DELAY", "0")))
    if len(sys.argv) == 4 and sys.argv[1] == "--http":  # --http HOST PORT: stateless streamable HTTP at /mcp
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings

        host, port = sys.argv[2], int(sys.argv[3])
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        server.run()
