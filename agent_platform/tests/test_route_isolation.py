"""Every API route, taken from the OpenAPI schema so a new route is covered the day it
is added: another tenant's caller gets 403 (id-addressed objects) or 404 (names and
private agents) and none of the owner's data; list routes never show foreign rows;
nothing of the owner's changes; a missing, malformed, forged or revoked bearer is 401
with a ``Bearer`` challenge.

Transactional: the stream route checks its caller on a worker thread, which sees only
committed rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from agent_platform.models import ApiToken
from agent_platform.tests.factories import issue_token
from agent_platform.tests.tenancy import Seeded, seed
from sessions_app.models import Approval, ApprovalStatus, Artifact, Session, Turn

pytestmark = pytest.mark.django_db(transaction=True)

# Routes outside the JSON API: pages, probes, the schema itself, the admin.
NOT_API = {
    "/",
    "/healthz",
    "/api/schema",
    "/favicon.ico",
    # Pages for people; their data comes from the API routes tested here.
    "/admin/dashboard/",  # agent_platform/tests/test_dashboard.py (tenant isolation)
    "/admin/extensions/",  # the deployment's installed packages, staff only (test_extension_packages_listed.py)
    "/{agent_slug}/playground",  # a shell that reveals nothing (tests/test_playground.py)
    "/{agent_slug}/playground/renderers",  # the agent's own page assets, behind served_agent
    # Authored routes, not the platform's API: sessions_app/tests/test_channel_routes.py.
    "/{agent_slug}/v1/^channels/(?P{channel_name}[^/]+)(?P{route_path}/.*)?$",
    # MCP (JSON-RPC; its refusals are tool results): sessions_app/tests/test_mcp_server.py.
    "/{agent_slug}/v1/mcp",
    "/{agent_slug}/v1/mcp/tools",
}


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    spec: dict[str, Any]

    @property
    def anonymous_allowed(self) -> bool:
        return {} in self.spec.get("security", [])

    @property
    def query_names(self) -> set[str]:
        return {p["name"] for p in self.spec.get("parameters", []) if p["in"] == "query"}

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def schema_operations() -> list[Operation]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        Operation(method.upper(), path, spec)
        for path, operations in schema["paths"].items()
        for method, spec in operations.items()
    ]


def resolver_routes(patterns: list[Any] | None = None, prefix: str = "/") -> set[str]:
    """Every URL the resolver serves, as an OpenAPI path template."""
    found: set[str] = set()
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue
            found |= resolver_routes(entry.url_patterns, prefix + route)
        elif isinstance(entry, URLPattern):
            found.add(_template(prefix + route))
    return found


def _template(route: str) -> str:
    import re

    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


@pytest.fixture
def owner_data(alice) -> Seeded:
    return seed(alice)


def _requests(operation: Operation, data: Seeded, slug: str) -> list[tuple[str, dict[str, Any] | None]]:
    """URLs (and bodies) for ``operation`` that name the owner's objects wherever the
    route takes a name or an id: in the path, the query and the JSON body."""
    params = {
        "agent_slug": slug,
        "session_id": data.session.pk,
        "call_id": data.approval.call_id,
        "artifact_id": data.artifact.pk,
        "tool_name": "get_weather",
        "prefix": data.token_prefix,
        "reminder_id": "rem_probe",
        "schedule_id": "probe",
        "run_id": data.eval_run_id,
        "tenant_slug": data.session.tenant.slug,
    }
    url = operation.path.format(**params)
    if "sessionId" in operation.query_names:
        url += f"?sessionId={data.session.pk}"
    if operation.method != "POST":
        return [(url, None)]
    if operation.path.endswith("/v1/a2a"):
        # JSON-RPC: the owner's session as a context, the owner's turn as a task.
        turn, context = data.approval.turn_id, data.session.pk
        sent = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": context}}
        return [
            (url, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})
            for n, (method, params) in enumerate(
                [
                    ("SendMessage", sent),
                    ("SendStreamingMessage", sent),
                    ("GetTask", {"id": turn}),
                    ("CancelTask", {"id": turn}),
                ]
            )
        ]
    token = data.session.continuation_token
    common = {"message": "hi", "decision": "approve", "name": "probe"}
    nested = {"city": "Lyon", "sessionId": data.session.pk, "continuationToken": token}
    return [
        (url, {**common, "sessionId": data.session.pk, "input": nested}),
        (url, {**common, "continuationToken": token, "input": {"city": "Lyon"}}),
    ]


def _is_dev_only(operation: Operation) -> bool:
    """Dev mode's routes: outside it (as here) they do not exist, 404 whatever the credentials."""
    return "/v1/dev/" in operation.path and "/v1/dev/evals" not in operation.path


def _expected(operation: Operation, slug: str, data: Seeded, body: dict[str, Any] | None) -> set[int]:
    if slug == data.private_agent.slug or _is_dev_only(operation):
        return {404}  # another tenant's agent does not exist for the caller
    if "{tenant_slug}" in operation.path:
        return {403}  # a tenant's quotas are a superuser's to set
    if "{prefix}" in operation.path or "{run_id}" in operation.path:
        return {404}  # token prefixes and eval runs are looked up in the caller's own tenant
    if operation.path.endswith("/dev/evals/runs") and body is not None:
        return {202, 409}  # a run of the caller's own tenant (one at a time)
    if "{session_id}" in operation.path or "{artifact_id}" in operation.path:
        return {403}
    if body is not None and operation.path.endswith("/tools/{tool_name}"):
        return {403}  # the body names the owner's session, by id or continuation token
    if body is not None and operation.path.endswith("/session") and "continuationToken" in body:
        return {403}
    if "sessionId" in operation.query_names:
        return {403}
    return {200, 201}


def _call(client: APIClient, method: str, url: str, body: dict[str, Any] | None) -> Any:
    if body is None:
        return getattr(client, method.lower())(url)
    return getattr(client, method.lower())(url, body, format="json")


def test_every_api_route_is_in_the_schema():
    served = {route for route in resolver_routes() if route not in NOT_API}
    documented = {operation.path for operation in schema_operations()}
    assert served - documented == set(), "routes missing from the OpenAPI schema (and so from these tests)"


def test_another_tenant_gets_403_or_404_none_of_the_owners_data_and_changes_nothing(owner_data, mallory):
    session = owner_data.session
    turns = Turn.objects.filter(session=session).count()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(mallory)}")
    seen, problems = 0, []
    for operation in schema_operations():
        if not operation.path.startswith("/{agent_slug}/"):
            slugs = ["-"]
        else:
            slugs = ["weather", owner_data.private_agent.slug]
        for slug in slugs:
            for url, body in _requests(operation, owner_data, slug):
                response = _call(client, operation.method, url, body)
                # A stream answered to a stranger is already a failure; it would never end.
                content = b"" if response.streaming else response.content
                seen += 1
                expected = _expected(operation, slug, owner_data, body)
                if response.status_code not in expected:
                    problems.append(f"{operation} {url} {body}: {response.status_code}, expected {expected}")
                leaked = owner_data.leaked(content, url + json.dumps(body))
                if leaked:
                    problems.append(f"{operation} {url}: response shows {leaked}")
    assert not problems, "\n".join(problems)
    assert seen > 30
    fresh = Session.objects.get(pk=session.pk)
    assert (fresh.next_event_index, fresh.continuation_token) == (session.next_event_index, session.continuation_token)
    assert Turn.objects.filter(session=session).count() == turns
    assert Approval.objects.get(pk=owner_data.approval.pk).status == ApprovalStatus.PENDING
    assert Artifact.objects.filter(pk=owner_data.artifact.pk).exists()
    assert ApiToken.objects.active().filter(prefix=owner_data.token_prefix).exists()


@pytest.mark.parametrize("route", ["/weather/v1/sessions", "/weather/v1/artifacts", "/weather/v1/logs"])
def test_list_routes_show_the_callers_rows_only(owner_data, alice, mallory, client_for, route):
    mine = seed(mallory)
    owner = client_for(alice).get(route)
    assert owner.status_code == 200 and not mine.leaked(owner.content)
    stranger = client_for(mallory).get(route)
    assert stranger.status_code == 200 and not owner_data.leaked(stranger.content)
    # The stranger's own rows are there, so the test would notice an empty list.
    assert mine.leaked(stranger.content)


BAD_CREDENTIALS = {
    "malformed": "Bearer",
    "two words": "Bearer apt_a apt_b",
    "another scheme": "Basic YWxpY2U6c2VjcmV0",
    "forged": "Bearer apt_forgedforgedforgedforgedforgedforged",
}


def test_every_route_answers_a_bad_or_missing_bearer_with_401(owner_data, alice):
    revoked = issue_token(alice, name="to revoke")
    ApiToken.objects.get(principal=alice, name="to revoke").revoke()
    headers = {**BAD_CREDENTIALS, "revoked": f"Bearer {revoked}", "missing": None}
    problems = []
    for operation in (o for o in schema_operations() if not _is_dev_only(o)):
        for url, body in _requests(operation, owner_data, "weather")[:1]:
            for label, header in headers.items():
                if header is None and operation.anonymous_allowed:
                    continue
                client = APIClient()
                if header is not None:
                    client.credentials(HTTP_AUTHORIZATION=header)
                response = _call(client, operation.method, url, body)
                challenge = response.headers.get("WWW-Authenticate", "")
                if response.status_code != 401 or not challenge.startswith("Bearer"):
                    problems.append(f"{operation} with {label}: {response.status_code} {challenge!r}")
                elif owner_data.leaked(response.content, url + json.dumps(body)):
                    problems.append(f"{operation} with {label}: the 401 shows the owner's data")
    assert not problems, "\n".join(problems)
