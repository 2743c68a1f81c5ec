"""CORS on channel routes: a page of an origin a channel lists (``define_channel(cors_origins=
[...])``, the support example's widget) or its tenant lists (``Tenant.cors_origins``, for
the tenant's own agents) may call the channel's routes and the agent's session routes;
no other origin, and no other route, is open. Preflights and real requests."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from agent_platform.tests.factories import issue_token
from agents.sdk import DefinitionError, define_channel
from agents.tests.deploying import deployed_agent

pytestmark = pytest.mark.django_db

WIDGET = "http://localhost:8080"  # the support example's channel "web" lists it
ASK = "/support/v1/channels/web/ask"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def preflight(path: str, origin: str, method: str = "POST"):
    return APIClient().options(
        path,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )


def test_a_preflight_from_the_channels_origin_is_allowed():
    response = preflight(ASK, WIDGET)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == WIDGET
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert {"authorization", "content-type"} <= set(response["Access-Control-Allow-Headers"].split(", "))
    assert "Access-Control-Allow-Credentials" not in response  # no cookie crosses origins


def test_a_preflight_from_another_origin_gets_no_cors_headers():
    response = preflight(ASK, "https://evil.example")
    assert "Access-Control-Allow-Origin" not in response
    assert response.status_code == 401  # the route's own answer: the preflight is not answered for it


def test_the_real_request_from_the_widget_origin_starts_a_session_and_is_readable(alice):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(alice)}")
    response = client.post(ASK, {"question": "Where is order 1042?"}, format="json", HTTP_ORIGIN=WIDGET)
    assert response.status_code == 201
    assert response["Access-Control-Allow-Origin"] == WIDGET
    session_id = response.json()["sessionId"]
    # The widget follows what it started: the agent's session routes allow the same origin.
    state = client.get(f"/support/v1/session/{session_id}", HTTP_ORIGIN=WIDGET)
    assert state.status_code == 200
    assert state["Access-Control-Allow-Origin"] == WIDGET
    stream = preflight(f"/support/v1/session/{session_id}/stream", WIDGET, "GET")
    assert stream["Access-Control-Allow-Origin"] == WIDGET


def test_a_refusal_is_readable_by_the_widget_too():
    response = APIClient().post(ASK, {"question": "hi"}, format="json", HTTP_ORIGIN=WIDGET)
    assert response.status_code == 401
    assert response["Access-Control-Allow-Origin"] == WIDGET
    assert set(response.json()) == {"error", "message"}


@pytest.mark.parametrize(
    "path",
    ["/support/v1/tools", "/weather/v1/session", "/support/v1/info", "/api/v1/me", "/support/v1/channels/nope/x"],
)
def test_routes_no_channel_opens_get_no_cors_headers(path):
    assert "Access-Control-Allow-Origin" not in preflight(path, WIDGET)


def test_a_tenants_origins_open_its_own_agents_channels_only(alice):
    alice.tenant.cors_origins = ["https://acme.example"]
    alice.tenant.save()
    deployed_agent(alice.tenant, "acme-help", EXAMPLES / "support")
    assert preflight("/acme-help/v1/channels/web/ask", "https://acme.example")["Access-Control-Allow-Origin"] == (
        "https://acme.example"
    )
    assert preflight("/acme-help/v1/channels/web/ask", WIDGET)["Access-Control-Allow-Origin"] == WIDGET
    assert "Access-Control-Allow-Origin" not in preflight(ASK, "https://acme.example")  # a shared agent


@pytest.mark.parametrize("origin", ["https://shop.example/", "shop.example", "ftp://shop.example", "https://a/b"])
def test_cors_origins_must_be_origins(origin):
    with pytest.raises(DefinitionError, match="cors_origins"):
        define_channel(cors_origins=[origin])
