"""``GET /api/v1/tenants``, ``/tenants/:slug`` and ``/tenants/:slug/principals``: a
superuser's (a principal linked to a Django superuser); everyone else 403, whatever
the slug names."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agent_platform.models import ApiToken, Principal
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, issue_token, staff_user_for
from agents.models import AgentSource
from sessions_app.tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

ROUTES = ["/api/v1/tenants", "/api/v1/tenants/acme", "/api/v1/tenants/acme/principals"]


@pytest.fixture
def operator(db) -> Principal:
    principal = PrincipalFactory(tenant=TenantFactory(slug="ops"), name="root")
    principal.user = User.objects.create_superuser("root", password=None)  # no password: no slow hashing
    principal.save()
    return principal


@pytest.mark.parametrize("route", [*ROUTES, "/api/v1/tenants/no-such", "/api/v1/tenants/no-such/principals"])
def test_a_tenant_principal_gets_403_on_every_operator_route(alice, client_for, route):
    staff_user_for(alice)  # tenant staff are not superusers either
    response = client_for(alice).get(route)
    assert response.status_code == 403
    assert response.json()["error"] == "superuser_required"


def test_a_superuser_lists_every_tenant_a_page_at_a_time(alice, mallory, operator, client_for):
    AgentFactory(slug="acme-bot", tenant=alice.tenant, source=AgentSource.DEPLOYMENT)
    client = client_for(operator)
    first = client.get("/api/v1/tenants?limit=2").json()
    second = client.get(first["next"]).json()
    assert [t["slug"] for t in first["tenants"] + second["tenants"]] == ["acme", "ops", "umbrella"]
    assert second["next"] is None
    acme = first["tenants"][0]
    assert (acme["principals"], acme["agents"]) == (1, 1)


def test_a_superuser_sees_one_tenant_and_its_principals(alice, bob, operator, client_for):
    staff_user_for(bob)
    issue_token(alice)
    revoked, _ = ApiToken.issue(alice)
    revoked.revoke()
    client = client_for(operator)
    tenant = client.get("/api/v1/tenants/acme").json()
    assert tenant["slug"] == "acme" and tenant["principals"] == 2 and tenant["retentionDays"] is None
    principals = client.get("/api/v1/tenants/acme/principals").json()
    assert principals["next"] is None
    assert [(p["name"], p["username"], p["staff"], p["activeTokens"]) for p in principals["principals"]] == [
        ("alice", None, False, 1),
        ("bob", "bob-staff", True, 0),
    ]


def test_an_unknown_tenant_is_404_for_a_superuser(operator, client_for):
    client = client_for(operator)
    for route in ["/api/v1/tenants/no-such", "/api/v1/tenants/no-such/principals"]:
        response = client.get(route)
        assert response.status_code == 404 and response.json()["error"] == "tenant_not_found"


def test_a_superuser_token_without_read_or_manage_is_403(operator, client_for):
    _, token = ApiToken.issue(operator, scopes=["sessions"])
    client = client_for(operator)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/tenants").json()["error"] == "insufficient_scope"
