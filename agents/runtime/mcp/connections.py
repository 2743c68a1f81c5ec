"""An agent's MCP connections (DESIGN §9.7): what the model is offered, what host code
calls, and what ``/v1/tools`` reports.

``mcp-connections/`` servers whose ``advertise_tools`` is on give the model their tools
as ``<connection>__<tool>`` (only those of the ``tools`` allow-list, when there is one),
with their input schemas; ``host-connections/`` servers never reach the model. Host code
reaches either kind by name through ``ctx.host.mcp`` (an ``McpConnections``).

Values in a connection's ``env`` and ``headers`` (and its ``args`` and ``url``) may name
secrets as ``${NAME}``: they are resolved on each connect by the resolver the platform
passes in (secrets by name, §9.8), so no value is ever written in an agent tree.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool

from agents import sdk
from agents.discovery import AgentSurface
from agents.runtime.mcp.pool import POOL, McpPool, McpUnavailable, ServerSpec
from agents.runtime.outbound import OutboundPolicy
from agents.runtime.providers.base import ToolSpec
from agents.runtime.tool_calls import DEFAULT_TOOL_TIMEOUT, CallResult, error

logger = logging.getLogger(__name__)

SEPARATOR = "__"
LIST_TIMEOUT = 30.0  # starting a server and listing its tools
_SECRET = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what every provider accepts as a tool name

# A secret's value by name, or None when it is not set; the platform's looks it up on a
# database thread (agents.secrets.aresolve), so it may be async.
SecretResolver = Callable[[str], str | Awaitable[str | None] | None]


class McpCallError(RuntimeError):
    """``ctx.host.mcp.call`` failed: the server reported ``isError``, or could not be
    reached, or did not answer within the connection's timeout; ``str()`` says which."""


class UnknownConnection(McpCallError, KeyError):
    """No connection of that name (the message lists the agent's connections)."""

    def __str__(self) -> str:
        return str(self.args[0])


class _MissingSecret(Exception):
    pass


def _no_secrets(name: str) -> str | None:
    return None


@dataclass(frozen=True)
class McpTool:
    """One server tool as the model sees it."""

    name: str  # <connection>__<tool>
    connection: str
    tool: str
    spec: ToolSpec
    effect: str  # "read" (the server says readOnlyHint) or "write"
    needs_approval: bool


def result_output(result: CallToolResult) -> Any:
    """What a call gives back: the structured content when present, else the text joined."""
    if result.structured_content is not None:
        return result.structured_content
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


@dataclass
class McpConnections:
    """The MCP connections of one agent surface (a subagent has its own: ``for_surface``)."""

    surface: AgentSurface
    secret: SecretResolver = _no_secrets
    policy: OutboundPolicy = field(default_factory=OutboundPolicy)
    pool: McpPool = POOL

    def for_surface(self, surface: AgentSurface) -> McpConnections:
        return dataclasses.replace(self, surface=surface)

    # --- host code: ctx.host.mcp ----------------------------------------------------------------

    async def list_tools(self, connection: str) -> list[dict[str, Any]]:
        """``[{"name", "description", "inputSchema"}]`` of a connection (either kind).

        Raises:
            UnknownConnection: the agent has no connection of that name.
            McpCallError: the server cannot be reached or did not list in time.
        """
        entry = self._entry(connection)
        try:
            tools = await self._tools(connection, entry.value)
        except (McpUnavailable, _MissingSecret) as failure:
            raise McpCallError(f"{connection}: {failure}") from None
        return [{"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools]

    async def call(self, connection: str, tool: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call ``tool`` on ``connection`` (either kind) and return its output: the
        structured content when the server sends one, else its text.

        Raises:
            UnknownConnection: the agent has no connection of that name.
            McpCallError: the tool reported an error (``isError``), or the server cannot
                be reached or did not answer within the connection's timeout.
        """
        entry = self._entry(connection)
        result = await self._call(connection, entry.value, tool, dict(arguments or {}))
        if result.is_error:
            raise McpCallError(f"{connection}.{tool}: {_text(result.output)}")
        return result.output

    # --- the model's tools ------------------------------------------------------------------------

    async def model_tools(self) -> dict[str, McpTool]:
        """The tools of every advertised ``mcp-connections/`` server, by model-facing name.
        A server that cannot list is left out (``connection_errors`` says why)."""
        advertised = [(n, e.value) for n, e in self.surface.mcp_connections.items() if e.value.advertise_tools]
        listed = await asyncio.gather(*(self._tools(n, c) for n, c in advertised), return_exceptions=True)
        found: dict[str, McpTool] = {}
        for (name, connection), tools in zip(advertised, listed, strict=True):
            if isinstance(tools, BaseException):
                logger.warning("MCP connection %r of %s lists no tools: %s", name, self.surface.slug, tools)
                continue
            for tool in tools:
                offered = _offered(name, connection, tool)
                if offered is not None:
                    found[offered.name] = offered
        return found

    async def call_model_tool(self, tool: McpTool, arguments: dict[str, Any]) -> CallResult:
        """Run a model's call: an unreachable or hanging server is an error result too."""
        entry = self.surface.mcp_connections.get(tool.connection)
        if entry is None:
            return error(f"unknown connection {tool.connection!r}")
        return await self._call(tool.connection, entry.value, tool.tool, arguments)

    # --- operations ----------------------------------------------------------------------------------

    async def listing(self) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        """``/v1/tools``'s part: the model-facing tools, and one ``{"connection", "message"}``
        for each connection (of either kind) that cannot list its tools."""
        named = [*self.surface.mcp_connections.items(), *self.surface.host_connections.items()]
        listed = await asyncio.gather(*(self._tools(n, e.value) for n, e in named), return_exceptions=True)
        tools: list[dict[str, Any]] = []
        errors: list[dict[str, str]] = []
        for (name, entry), result in zip(named, listed, strict=True):
            if isinstance(result, BaseException):
                errors.append({"connection": name, "message": str(result)})
                continue
            if name not in self.surface.mcp_connections or not entry.value.advertise_tools:
                continue
            for tool in result:
                offered = _offered(name, entry.value, tool)
                if offered is not None:
                    tools.append(
                        {
                            "name": offered.name,
                            "title": tool.title,
                            "description": offered.spec.description,
                            "inputSchema": offered.spec.input_schema,
                            "effect": offered.effect,
                            "needsApproval": offered.needs_approval,
                            "source": "mcp",
                            "connection": name,
                            "extension": entry.extension,
                        }
                    )
        return tools, errors

    # --- internals ------------------------------------------------------------------------------------

    def _entry(self, name: str) -> Any:
        entry = self.surface.mcp_connections.get(name) or self.surface.host_connections.get(name)
        if entry is None:
            known = sorted([*self.surface.mcp_connections, *self.surface.host_connections])
            raise UnknownConnection(f"no MCP connection {name!r}; the agent has: {', '.join(known) or 'none'}")
        return entry

    async def _spec(self, name: str, connection: sdk.McpConnection) -> ServerSpec:
        """The server to connect to, secrets filled in (looked up now, on every connect).

        Raises:
            _MissingSecret: a ``${NAME}`` that resolves to nothing.
        """
        texts = [
            connection.command or "",
            *connection.args,
            *connection.env.values(),
            connection.url or "",
            *connection.headers.values(),
        ]
        values: dict[str, str] = {}
        for secret in dict.fromkeys(match.group(1) for text in texts for match in _SECRET.finditer(text)):
            found = self.secret(secret)
            found = await found if inspect.isawaitable(found) else found
            if found is None:
                raise _MissingSecret(f"the secret {secret!r} is not set")
            values[secret] = found

        def fill(text: str) -> str:
            return _SECRET.sub(lambda match: values[match.group(1)], text)

        return ServerSpec(
            name=name,
            command=fill(connection.command) if connection.command else None,
            args=tuple(fill(arg) for arg in connection.args),
            env=tuple((key, fill(value)) for key, value in connection.env.items()),
            cwd=str(self.surface.path),
            url=fill(connection.url) if connection.url else None,
            headers=tuple((key, fill(value)) for key, value in connection.headers.items()),
            policy=self.policy,
        )

    async def _tools(self, name: str, connection: sdk.McpConnection) -> list[Tool]:
        return await self.pool.list_tools(await self._spec(name, connection), min(_timeout(connection), LIST_TIMEOUT))

    async def _call(self, name: str, connection: sdk.McpConnection, tool: str, arguments: dict[str, Any]) -> CallResult:
        if connection.tools is not None and tool not in connection.tools:
            return error(f"{tool!r} is not among the tools of connection {name!r}: {', '.join(connection.tools)}")
        timeout = _timeout(connection)
        try:
            result = await self.pool.call_tool(await self._spec(name, connection), tool, arguments, timeout)
        except (McpUnavailable, _MissingSecret) as failure:
            return error(f"MCP connection {name!r}: {failure}")
        return CallResult(result_output(result), is_error=result.is_error)


def _timeout(connection: sdk.McpConnection) -> float:
    return connection.timeout or DEFAULT_TOOL_TIMEOUT


def _text(output: Any) -> str:
    if isinstance(output, Mapping) and "error" in output:
        return str(output["error"])
    return str(output)


def _offered(name: str, connection: sdk.McpConnection, tool: Tool) -> McpTool | None:
    """The model-facing form of a server tool, or None when the allow-list leaves it out
    (or its name is one no model provider accepts)."""
    if connection.tools is not None and tool.name not in connection.tools:
        return None
    full = f"{name}{SEPARATOR}{tool.name}"
    if not _MODEL_NAME.match(full):
        logger.warning("MCP tool %r is not offered: a model tool name must match %s", full, _MODEL_NAME.pattern)
        return None
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    approval = connection.needs_approval
    needs = approval if isinstance(approval, bool) else tool.name in approval
    schema = tool.input_schema or {"type": "object", "properties": {}}
    description = tool.description or tool.title or f"{tool.name} (MCP server {name})"
    return McpTool(full, name, tool.name, ToolSpec(full, description, schema), "read" if read_only else "write", needs)
