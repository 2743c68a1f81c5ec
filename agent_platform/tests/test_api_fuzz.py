"""Schemathesis against ``/api/schema``, in process, on every documented route.

The caller is mallory (tenant umbrella), with sessions, a parked call, an artifact and
a token of her own so the owner's paths are reached, and path parameters drawn from
alice's objects (tenant acme) too. Each response must be documented (status, content
type, body schema), valid data must be accepted and invalid data refused, and no
response may be a 500, carry a traceback or show any of alice's data.

The example budget is small and fixed so the run stays well under a minute; raise
``FUZZ_EXAMPLES`` locally for a longer hunt.
"""

from __future__ import annotations

import copy
import json
import os
import re
import uuid
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agent_platform.tests.factories import issue_token
from agent_platform.tests.tenancy import Seeded, seed
from sessions_app.api.idempotency import HEADER as IDEMPOTENCY_HEADER

# Transactional: requests go through the real WSGI handler, which opens and closes
# database connections per request (and the stream route checks on another thread).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
    positive_data_acceptance,
]
# 413 is how an oversized body is refused; it is documented on every route with a body.
REJECTED = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "413", "429"]
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"/|django\.db\.|psycopg")


def _path_parameters(operation: Any, own: Seeded, other: Seeded, mode: GenerationMode) -> list[dict[str, str]]:
    """Fixed path parameters to mix in: the caller's own objects and alice's. Left out:
    the caller's own live stream (it never ends) and anything in negative mode, where
    the parameters themselves are what gets broken."""
    if mode is GenerationMode.NEGATIVE or "agent_slug" not in operation.path:
        return []
    choices = []
    for data in (own, other):
        if data is own and operation.path.endswith("/stream"):
            continue
        values = {
            "session_id": data.session.pk,
            "call_id": data.approval.call_id,
            "artifact_id": data.artifact.pk,
            "tool_name": "get_weather",
            "run_id": data.eval_run_id,
            "secret_name": data.secret_name,
        }
        names = set(re.findall(r"{(\w+)}", operation.path)) - {"agent_slug"}
        choices.append({"agent_slug": "weather", **{name: values[name] for name in names if name in values}})
    return choices


def _strategy(operation: Any, own: Seeded, other: Seeded, mode: GenerationMode) -> st.SearchStrategy[Any]:
    generated: dict[str, str] | None = {"agent_slug": "weather"} if "{agent_slug}" in operation.path else None
    strategies = [operation.as_strategy(generation_mode=mode, path_parameters=generated)]
    for fixed in _path_parameters(operation, own, other, mode):
        strategies.append(operation.as_strategy(generation_mode=mode, path_parameters=fixed))
    return st.one_of(strategies)


def _config(caller) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "auth": {"openapi": {"bearerAuth": {"bearer": issue_token(caller, name="fuzz")}}},
            # Strings never carry NUL: the API description says so (Postgres cannot store it);
            # that NUL is refused with 400 is tested directly.
            "generation": {"allow-x00": False},
            "checks": {
                "negative_data_rejection": {"expected-statuses": REJECTED},
                "positive_data_acceptance": {"expected-statuses": ACCEPTED},
            },
        }
    )


def _fresh_idempotency_key(case: Any, mode: GenerationMode) -> None:
    """A client sends a new key with each new request; reusing one for another body is a
    documented 400 that random generation would otherwise stumble into."""
    if mode is GenerationMode.POSITIVE and case.headers and IDEMPOTENCY_HEADER in case.headers:
        case.headers[IDEMPOTENCY_HEADER] = uuid.uuid4().hex


def _fuzz(mode: GenerationMode, caller, own: Seeded, other: Seeded) -> list[str]:
    schema = schemathesis.openapi.from_wsgi("/api/schema", WSGIHandler(), config=_config(caller))
    failures: dict[str, str] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        # The generic tool route's `input` is checked against the named tool's own schema,
        # which the route's schema cannot carry: valid input is fuzzed per tool below.
        generic = operation.path.endswith("{tool_name}")
        # A fork's atIndex past the session's last index is a documented 400 the schema
        # cannot express (it depends on the session); valid points: sessions_app/tests/test_fork.py.
        bounded_by_the_log = operation.path.endswith("/fork")
        checks = [
            check for check in CHECKS if not ((generic or bounded_by_the_log) and check is positive_data_acceptance)
        ]
        try:
            _exercise(_strategy(operation, own, other, mode), mode, checks, other, failures)
        except Unsatisfiable:
            # Nothing in this operation can be made invalid (e.g. only its fixed path parameter).
            assert mode is GenerationMode.NEGATIVE, operation.label
    return [f"{title}\n{detail}" for title, detail in failures.items()]


def _exercise(
    strategy: st.SearchStrategy[Any], mode: GenerationMode, checks: list[Any], other: Seeded, failures: dict[str, str]
) -> None:
    """Send ``EXAMPLES`` generated cases; record each distinct failure with its reproduction."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def exercise(case: Any) -> None:
        _fresh_idempotency_key(case, mode)
        response = case.call()
        label = case.operation.label
        sent = response.request.url + (response.request.body or b"").decode(errors="replace")
        try:
            case.validate_response(response, checks=checks)
        except BaseException as error:  # schemathesis raises a group of every failed check
            titles = sorted(set(re.findall(r"- (ST\d+ [^\n]+)", str(error)))) or [type(error).__name__]
            failures.setdefault(f"{label}: {', '.join(titles)}", str(error)[:2000])
        if TRACEBACK.search(response.text):
            failures.setdefault(f"{label}: traceback in the body", response.text[:2000])
        leaked = other.leaked(response.text, sent)
        if leaked:
            failures.setdefault(f"{label}: shows another tenant's {leaked}", sent[:500])

    exercise()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_the_api_answers_as_its_schema_says_and_never_fails_or_leaks(alice, mallory, mode):
    other, own = seed(alice), seed(mallory)
    failures = _fuzz(mode, mallory, own, other)
    assert not failures, "\n\n".join(failures)


def _tool_schema(client, slug: str, tool: str) -> dict[str, Any]:
    """The platform's schema with one route for one tool, whose ``input`` is the tool's own
    published input schema (``GET /<slug>/v1/tools/<tool>``)."""
    document = json.loads(client.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    route = copy.deepcopy(document["paths"]["/{agent_slug}/v1/tools/{tool_name}"]["post"])
    route["parameters"] = [p for p in route["parameters"] if p["in"] != "path"]
    body = route["requestBody"]["content"]["application/json"]["schema"]
    name = body["$ref"].rsplit("/", 1)[-1]
    specialised = copy.deepcopy(document["components"]["schemas"][name])
    specialised["properties"]["input"] = client.get(f"/{slug}/v1/tools/{tool}").json()["inputSchema"]
    specialised["required"] = ["input"]
    for field in ("sessionId", "continuationToken"):
        specialised["properties"].pop(field)  # a session of one's own is fuzzed above
    document["components"]["schemas"]["SpecialisedToolCall"] = specialised
    route["requestBody"]["required"] = True
    route["requestBody"]["content"] = {
        "application/json": {"schema": {"$ref": "#/components/schemas/SpecialisedToolCall"}}
    }
    document["paths"] = {f"/{slug}/v1/tools/{tool}": {"post": route}}
    return document


def test_each_tool_route_accepts_what_the_tools_published_schema_allows(alice, mallory, client_for):
    other, failures = seed(alice), {}
    for tool in ["get_weather", "get_forecast"]:
        _fuzz_tool(client_for(mallory), mallory, "weather", tool, other, failures)
    assert not failures, "\n\n".join(failures.values())


def _fuzz_tool(client, caller, slug: str, tool: str, other: Seeded, failures: dict[str, str]) -> None:
    schema = schemathesis.openapi.from_dict(_tool_schema(client, slug, tool), config=_config(caller))
    schema.app = WSGIHandler()  # what from_wsgi sets: requests go to the app in process
    [operation] = [result.ok() for result in schema.get_all_operations()]
    _exercise(operation.as_strategy(), GenerationMode.POSITIVE, CHECKS, other, failures)


# --- path segments ---------------------------------------------------------------------------

# Each is put in one URL segment as it would arrive on the wire (already percent-encoded).
HOSTILE_SEGMENTS = [
    "%00",
    "ses_%00",
    "a%00b",
    "x" * 300,
    "%C3%A9t%C3%A9",  # été
    "%F0%9F%92%A9",  # an emoji
    "%ED%A0%80",  # an encoded surrogate: not UTF-8
    "%FF",
    "..",
    "%2e%2e",
    "..%2F..%2Fetc",
    "%2F",
    "%25",
    "%5C",
]
PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")


def _route_templates() -> list[str]:
    """Every ``path()`` route of the project, admin included, as ``a/<name>/b``."""
    from django.urls import URLPattern, URLResolver, get_resolver
    from django.urls.resolvers import RoutePattern

    found: list[str] = []

    def walk(patterns: Any, prefix: str) -> None:
        for entry in patterns:
            if not isinstance(entry.pattern, RoutePattern):
                continue  # regex routes (the channel routes) are fuzzed by hand below
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and PARAMETER.search(route):
                found.append(route)

    walk(get_resolver().url_patterns, "/")
    return [*sorted(set(found)), "/<agent_slug>/v1/channels/<channel_name>/<route_path>"]


def _fill(template: str, values: dict[str, str], hostile: str | None = None, at: str | None = None) -> str:
    return PARAMETER.sub(lambda m: hostile if m.group(1) == at else values.get(m.group(1), "x"), template)


def test_no_url_segment_makes_any_route_fail(alice, mallory, client_for, admin_user):
    """NUL, overlong, non-UTF-8, dot-dot and percent-encoded segments in every path
    parameter of every route, for the API caller and for a superuser in the admin:
    always an answer below 500 with no traceback."""
    from django.test import Client

    own, other = seed(mallory), seed(alice)
    values = {
        "agent_slug": "weather",
        "session_id": own.session.pk,
        "call_id": own.approval.call_id,
        "artifact_id": own.artifact.pk,
        "tool_name": "get_weather",
        "prefix": own.token_prefix,
        "object_id": own.session.pk,
        "app_label": "sessions_app",
        "channel_name": "web",
        "route_path": "x",
    }
    api, admin = client_for(mallory), Client(raise_request_exception=False)
    api.raise_request_exception = False
    admin.force_login(admin_user)
    failures = []
    for template in _route_templates():
        client = admin if template.startswith("/admin/") else api
        methods = ["get"] if client is admin else ["get", "post", "delete"]
        for name in PARAMETER.findall(template):
            for hostile in HOSTILE_SEGMENTS:
                url = _fill(template, values, hostile, name)
                for method in methods:
                    response = (
                        getattr(client, method)(url, *([{}] if method == "post" else []), format="json")
                        if client is api
                        else client.get(url)
                    )
                    if response.status_code >= 500 or TRACEBACK.search(response.content.decode(errors="replace")):
                        failures.append(f"{method.upper()} {url} -> {response.status_code}")
                    if other.leaked(response.content, url):
                        failures.append(f"{method.upper()} {url} shows alice's data")
    assert not failures, "\n".join(failures)


ADMIN_QUERIES = ["?q=%00", "?status__exact=%00", "?principal__id__exact=%00", "?o=%00", "?p=%00", "?tenant=%00"]


def test_no_query_or_cookie_with_nul_makes_a_page_fail(mallory, client_for, admin_user):
    """NUL in admin filters and search, in API query parameters, and in the session cookie."""
    from django.contrib import admin as django_admin
    from django.test import Client

    own = seed(mallory)
    admin = Client(raise_request_exception=False)
    admin.force_login(admin_user)
    pages = [f"/admin/{model._meta.app_label}/{model._meta.model_name}/" for model in django_admin.site._registry]
    failures = []
    for page in pages:
        for query in ADMIN_QUERIES:
            response = admin.get(page + query)
            if response.status_code >= 500:
                failures.append(f"GET {page}{query} -> {response.status_code}")
    api = client_for(mallory)
    api.raise_request_exception = False
    for url in ["/weather/v1/sessions", f"/weather/v1/session/{own.session.pk}/events", "/weather/v1/logs"]:
        for query in ["?limit=%00", "?startIndex=%00", "?after=%00", "?%00=1", "?sessionId=%00"]:
            response = api.get(url + query)
            if response.status_code >= 500:
                failures.append(f"GET {url}{query} -> {response.status_code}")
    cookies = Client(raise_request_exception=False)
    cookies.cookies["sessionid"] = "abc\x00def"
    for url in ["/", "/admin/", "/weather/playground"]:
        response = cookies.get(url)
        if response.status_code >= 500:
            failures.append(f"GET {url} with a NUL in the session cookie -> {response.status_code}")
    assert not failures, "\n".join(failures)
