"""``POST /<slug>/v1/mcp`` and ``POST /<slug>/v1/mcp/tools``: the agent as an MCP server
(the tools are ``sessions_app.mcp_server``'s).

A DRF view checks the request as every session route does (the bearer token, 401 with
its challenge; the agent of the URL, 404 for another tenant's, 503 when its tree is
broken; GET and DELETE are 405, the transport is stateless) and reads the body; then
the MCP SDK answers it. With the ASGI layer (``mcp_endpoints``, in
``agent_platform.asgi``) the view only hands the request over through the scope, as
the stream view does, and the SDK answers on the event loop: a waiting ``ask`` holds no
thread. Without it (another entry point), the view answers the request itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import BaseParser
from rest_framework.request import Request

from agent_platform.auth import caller
from agent_platform.body_limit import ASGIApp, Message, Receive, Scope, Send
from agents.api.base import AgentView
from sessions_app import mcp_server
from sessions_app.mcp_server import Endpoint, McpCaller

# The scope key under which ``mcp_endpoints`` offers to serve an MCP request.
HANDOFF = "platform.mcp_handoff"
PATH_ENDINGS = ("/v1/mcp", "/v1/mcp/tools")


@dataclass
class Handoff:
    """What the view hands to ``mcp_endpoints`` (None: nothing, Django answers)."""

    endpoint: Endpoint | None = None
    caller: McpCaller | None = None
    body: bytes = b""


def mcp_endpoints(app: ASGIApp) -> ASGIApp:
    """ASGI middleware, outermost on HTTP: once the view has let an MCP request through,
    the MCP SDK answers it here, on the event loop; everything else passes through."""

    async def outermost(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).endswith(PATH_ENDINGS):
            await app(scope, receive, send)
            return
        handoff, taken = Handoff(), False

        async def django_send(message: Message) -> None:
            nonlocal taken
            if message["type"] == "http.response.start":
                taken = handoff.caller is not None and message["status"] == 200
            if not taken:
                await send(message)  # the view's own answer: an error

        await app({**scope, HANDOFF: handoff}, receive, django_send)
        if taken and handoff.caller is not None and handoff.endpoint is not None:
            await mcp_server.serve(handoff.endpoint, handoff.caller, scope, handoff.body, receive, send)

    return outermost


class _AnyBody(BaseParser):
    """The body is the MCP SDK's to read and judge (JSON-RPC); DRF leaves it alone."""

    media_type = "*/*"


class McpView(AgentView):
    """``POST /<slug>/v1/mcp``: ``ask``, ``check``, ``approve``, ``call_tool``."""

    endpoint: Endpoint = "agent"
    parser_classes = [_AnyBody]

    # JSON-RPC, whose contract is MCP's (docs/mcp-server.md), not an OpenAPI operation.
    @extend_schema(exclude=True)
    def post(self, request: Request, agent_slug: str) -> HttpResponse:
        mcp_caller = McpCaller(caller(request), self.agent, self.surface)
        body = request.body
        handoff = getattr(request, "scope", {}).get(HANDOFF)
        if isinstance(handoff, Handoff):
            handoff.endpoint, handoff.caller, handoff.body = self.endpoint, mcp_caller, body
            return HttpResponse(status=200)
        status, headers, content = async_to_sync(mcp_server.serve_once)(
            self.endpoint, mcp_caller, _scope_of(request), body
        )
        response = HttpResponse(content, status=status)
        for name, value in headers:
            if name.lower() != b"content-length":
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response


class McpToolsView(McpView):
    """``POST /<slug>/v1/mcp/tools``: each server tool of the agent under its own name."""

    endpoint = "tools"

    @extend_schema(exclude=True)
    def post(self, request: Request, agent_slug: str) -> HttpResponse:
        return super().post(request, agent_slug)


def _scope_of(request: Request) -> Scope:
    """An ASGI scope for a request that came another way (WSGI, the test client)."""
    meta = request.META
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for key, value in meta.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if meta.get(key):
            headers.append((name, str(meta[key]).encode("latin-1")))
    return {
        "type": "http",
        "method": request.method,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": meta.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "scheme": request.scheme,
        "server": (meta.get("SERVER_NAME", "localhost"), int(meta.get("SERVER_PORT") or 80)),
        "client": (meta.get("REMOTE_ADDR", ""), 0),
        "http_version": "1.1",
    }
