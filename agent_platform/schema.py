"""OpenAPI description of the platform's own authentication."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


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
