"""Token scopes and expiry: ``read`` reads anything, ``sessions`` uses agents,
``manage`` runs the management API; an expired token is 401 like a revoked one."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agent_platform.models import ApiToken

pytestmark = pytest.mark.django_db


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def issued(client: APIClient, **body) -> dict:
    response = client.post("/api/v1/tokens", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_new_token_has_every_scope_and_never_expires_unless_asked(alice, client_for):
    token = issued(client_for(alice))
    assert token["scopes"] == ["read", "sessions", "manage"]
    assert token["expiresAt"] is None and token["active"] is True


def test_a_token_with_an_expiry_shows_it_and_is_401_once_past_it(alice, client_for):
    token = issued(client_for(alice), name="short", expiresInSeconds=3600)
    expires = timezone.now() + timedelta(seconds=3600)
    assert abs((datetime.fromisoformat(token["expiresAt"]) - expires).total_seconds()) < 60
    client = bearer(token["token"])
    assert client.get("/api/v1/me").status_code == 200
    row = ApiToken.objects.get(prefix=token["prefix"])
    row.expires_at = timezone.now() - timedelta(seconds=1)
    row.save(update_fields=["expires_at"])
    refused = client.get("/api/v1/me")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert "expired" in refused.json()["message"]
    shown = client_for(alice).get(f"/api/v1/tokens/{token['prefix']}").json()
    assert shown["active"] is False and shown["revokedAt"] is None


def test_a_remembered_token_is_refused_once_it_expires(alice, settings):
    settings.PLATFORM = {**settings.PLATFORM, "TOKEN_CACHE_SECONDS": 300}
    _, token = ApiToken.issue(alice, expires_at=timezone.now() + timedelta(seconds=1))
    client = bearer(token)
    assert client.get("/api/v1/me").status_code == 200  # now remembered by this process
    deadline = time.monotonic() + 10
    while client.get("/api/v1/me").status_code == 200:
        assert time.monotonic() < deadline, "an expired token was still admitted"
        time.sleep(0.05)
    assert client.get("/api/v1/me").status_code == 401


def test_a_read_token_reads_but_cannot_start_sessions_or_manage(alice, client_for):
    client = bearer(issued(client_for(alice), scopes=["read"])["token"])
    assert client.get("/api/v1/agents").status_code == 200
    assert client.get("/weather/v1/sessions").status_code == 200
    started = client.post("/weather/v1/session", {"message": "hi"}, format="json")
    assert started.status_code == 403
    assert started.json()["error"] == "insufficient_scope"
    assert client.post("/api/v1/tokens", {}, format="json").status_code == 403


def test_a_sessions_token_uses_agents_but_not_the_management_api(alice, client_for):
    client = bearer(issued(client_for(alice), scopes=["sessions"])["token"])
    started = client.post("/weather/v1/session", {"message": "hi"}, format="json")
    assert started.status_code == 201
    assert client.get(f"/weather/v1/session/{started.json()['sessionId']}").status_code == 200
    assert client.get("/api/v1/tokens").json()["error"] == "insufficient_scope"
    assert client.get("/api/v1/me").status_code == 200  # who am I: any scope


def test_a_manage_token_runs_the_management_api_but_no_agent(alice, client_for):
    client = bearer(issued(client_for(alice), scopes=["manage"])["token"])
    assert client.get("/api/v1/tokens").status_code == 200
    assert issued(client, scopes=["manage"])["scopes"] == ["manage"]
    assert client.get("/weather/v1/sessions").status_code == 403


def test_a_token_cannot_grant_a_scope_it_lacks(alice, client_for):
    client = bearer(issued(client_for(alice), scopes=["manage"])["token"])
    refused = client.post("/api/v1/tokens", {"scopes": ["manage", "sessions"]}, format="json")
    assert refused.status_code == 403
    assert "sessions" in refused.json()["message"]
    assert ApiToken.objects.filter(principal=alice).count() == 2


@pytest.mark.parametrize(
    "body",
    [
        {"scopes": []},
        {"scopes": ["admin"]},
        {"scopes": "read"},
        {"expiresInSeconds": 0},
        {"expiresInSeconds": "60"},
        {"expiresInSeconds": 1.5},
        {"expiresInSeconds": 1e12},
        {"expiresInSeconds": True},
    ],
    ids=str,
)
def test_a_bad_scope_list_or_expiry_is_400(alice, client_for, body):
    response = client_for(alice).post("/api/v1/tokens", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_duplicate_scopes_are_kept_once_in_a_stable_order(alice, client_for):
    assert issued(client_for(alice), scopes=["manage", "read", "manage"])["scopes"] == ["read", "manage"]
