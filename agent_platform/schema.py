"""The OpenAPI schema's own parts: the platform's authentication, the error statuses every
route may answer, and the tags that group the routes for people (``/api/docs/``), with
text for what OpenAPI cannot express (the WebSocket, MCP and channel routes)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from agents.events import EventType


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "agent_platform.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "An API token from `manage.py token create`."}


ERROR_COMPONENT = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
    "required": ["error", "message"],
}

# What every route may answer besides its own documented statuses, and when.
_COMMON_ERRORS = {
    "400": "Invalid body or query (a `message` names the problem).",
    "401": "No credential admitted: missing, malformed, unknown, revoked or expired bearer token.",
    "403": "The object belongs to another principal, or the token lacks the scope the route needs.",
    "404": "No such agent or object (another tenant's private agent included), or a `cursor` this API did not write.",
    "413": "The request body is larger than the platform accepts.",
    "415": "The body is not `application/json`.",
    "503": "The database is unavailable, or the agent's tree has errors.",
}


def _error_codes(path: str, operation: dict[str, Any]) -> list[str]:
    codes = ["401", "503"]
    parameters = operation.get("parameters", [])
    if "requestBody" in operation or any(p.get("in") == "query" for p in parameters):
        codes.append("400")
    if "requestBody" in operation:
        codes += ["413", "415"]
    if any(p.get("in") == "path" or p.get("name") == "cursor" for p in parameters):
        codes.append("404")
    # A token without the route's scope is refused (agent_platform.scopes); open routes check none.
    if "{session_id}" in path or {} not in operation.get("security", []):
        codes.append("403")
    return codes


def document_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """A ``POSTPROCESSING_HOOKS`` entry: each operation lists the error statuses the
    platform's authentication, parser, routing and outage handling can answer for it,
    with the ``{error, message}`` envelope, so clients (and schemathesis) can rely on them."""
    result.setdefault("components", {}).setdefault("schemas", {}).setdefault("Error", ERROR_COMPONENT)
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for code in _error_codes(path, operation):
                responses.setdefault(code, {"description": _COMMON_ERRORS[code], "content": envelope})
    return result


# Tags, in the order the API docs show them: (name, description). Routes are tagged by
# their path in ``_tag_of``; the last three have no operation of their own in the schema.
TAGS: list[tuple[str, str]] = [
    ("sessions", "Start, continue, inspect, stop and fork sessions; approvals. `docs/http.md`."),
    (
        "streams",
        "A session's events, replayed from `startIndex` and then live, ending after `session.completed` "
        "or `session.failed`. Three transports carry the same records `{type, index, sessionId, turnId?, "
        "at, data}` (the `StreamedEvent` schema): NDJSON (default, one record per line; `?heartbeat=1` adds "
        '`{"type":"heartbeat"}` lines while idle), Server-Sent Events (`Accept: text/event-stream`: `id:` = '
        "index, `event:` = type, `data:` = the record, `: ping` comments while idle, `Last-Event-ID` resumes "
        "after that index) and the WebSocket (tag `websocket`). Event types: "
        + ", ".join(f"`{event_type.value}`" for event_type in EventType)
        + ". A client that reconnects from the index after the last record it handled misses nothing and "
        "sees nothing twice. `docs/streams.md`.",
    ),
    ("tools", "The agent's tools: describe them, or run a server tool with no model turn."),
    ("agent", "What was discovered (`/v1/info`), health, logs and A/B reports of one agent."),
    ("artifacts", "Artifacts a session tagged; content always as an attachment."),
    ("evals", "Eval cases and runs (dev routes)."),
    ("triggers", "Fire a schedule or a reminder by hand (dev mode only)."),
    (
        "a2a",
        "The agent as an A2A server: its agent card, and JSON-RPC at `POST /{agent_slug}/v1/a2a` "
        "(`SendMessage`, `SendStreamingMessage` as SSE, `GetTask`, `CancelTask`, and their A2A 0.3 names). "
        "A task is a turn. `docs/a2a.md`.",
    ),
    ("management", "The tenant's own principal, tokens and agents."),
    (
        "websocket",
        "`ws /ws/{agent_slug}/session/{session_id}?startIndex=N`: the stream's records, one per text "
        "frame, replayed from N then live (OpenAPI cannot describe a WebSocket). Auth: an "
        '`Authorization: Bearer` header, the subprotocols `["bearer", "<token>"]` (the server answers '
        "`bearer`), or the playground's session cookie; never a token in the query string. Frames from "
        "the client are ignored. Close codes: 4401 no credential, 4403 another principal's session, 4404 "
        "unknown session, 4400 bad startIndex, 4008 lagging (more than 1,000 events behind: resume from "
        "the last index), 4503 Redis unavailable, 4500 server failure. `docs/http.md`, `docs/streams.md`.",
    ),
    (
        "mcp",
        "`POST /{agent_slug}/v1/mcp` and `POST /{agent_slug}/v1/mcp/tools`: the agent as an MCP server "
        "(streamable HTTP, stateless, JSON-RPC 2.0 bodies; `Accept: application/json, text/event-stream`). "
        "`/v1/mcp` offers `ask`, `check`, `approve` and `call_tool`; `/v1/mcp/tools` each server tool by "
        "name. Refusals are tool results (`isError`), not HTTP statuses, so these routes are described "
        "here rather than as operations. `docs/mcp-server.md`.",
    ),
    (
        "channels",
        "`/{agent_slug}/v1/channels/{channel}{path}`: the routes an agent's channels define (any method), "
        "authored code rather than the platform's API. The Slack and GitHub packs verify their own "
        "signatures instead of a bearer token. A channel may allow browsers of other origins "
        "(`define_channel(cors_origins=[...])`): CORS preflight and headers for those origins only. "
        "`docs/triggers.md`.",
    ),
]

_TAG_PREFIXES: list[tuple[str, str]] = [
    ("/api/", "management"),
    ("/{agent_slug}/.well-known/", "a2a"),
    ("/{agent_slug}/v1/a2a", "a2a"),
    ("/{agent_slug}/v1/session/{session_id}/stream", "streams"),
    ("/{agent_slug}/v1/session", "sessions"),
    ("/{agent_slug}/v1/tools", "tools"),
    ("/{agent_slug}/v1/artifacts", "artifacts"),
    ("/{agent_slug}/v1/dev/evals", "evals"),
    ("/{agent_slug}/v1/dev/", "triggers"),
]


def _tag_of(path: str) -> str:
    for prefix, tag in _TAG_PREFIXES:
        if path.startswith(prefix):
            return tag
    return "agent"


def tag_operations(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """A ``POSTPROCESSING_HOOKS`` entry: each operation tagged by what it is about (``TAGS``),
    and the tags described, those of the routes OpenAPI cannot express included."""
    result["tags"] = [{"name": name, "description": description} for name, description in TAGS]
    for path, operations in result.get("paths", {}).items():
        for operation in operations.values():
            operation["tags"] = [_tag_of(path)]
    return result
