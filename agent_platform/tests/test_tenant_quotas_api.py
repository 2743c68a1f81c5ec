"""``PATCH /api/v1/tenants/<slug>`` and the admin: a superuser sets a tenant's quotas and
budget (null: back to the default); anyone else is refused (tenant staff see them
read-only), and the quotas set are the ones admission enforces."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User
from django.test import Client

from agent_platform.models import Tenant
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, admin_url, staff_user_for

ROUTE = "/api/v1/tenants/acme"


def superuser_principal():
    principal = PrincipalFactory(tenant=TenantFactory(slug="ops"), name="root")
    principal.user = User.objects.create_superuser("root", password=None)
    principal.save(update_fields=["user"])
    return principal


def test_a_superusers_token_sets_quotas_and_budget(alice, client_for):
    client = client_for(superuser_principal())
    body = {"maxRunningTurns": 5, "maxSessionsPerMinute": 30, "monthlyBudgetUsd": "12.50", "maxStoredBytes": 10**10}
    response = client.patch(ROUTE, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "slug": "acme",
        "maxRunningTurns": 5,
        "maxSessionsPerMinute": 30,
        "maxOpenStreams": None,
        "maxStoredBytes": 10**10,
        "monthlyBudgetUsd": "12.50",
    }
    tenant = Tenant.objects.get(slug="acme")
    assert (tenant.max_running_turns, tenant.monthly_budget_usd) == (5, Decimal("12.50"))
    # A field left out is unchanged; null is the platform's default again.
    again = client.patch(ROUTE, {"maxRunningTurns": None, "monthlyBudgetUsd": 0}, format="json")
    assert again.status_code == 200
    assert (again.json()["maxRunningTurns"], again.json()["maxSessionsPerMinute"]) == (None, 30)
    # The budget of 0 set here refuses alice's next turn.
    refused = client_for(alice).post("/weather/v1/session", {"message": "hi"}, format="json")
    assert refused.status_code == 429 and refused.json()["error"] == "budget_exhausted"


def test_others_are_refused_and_nothing_changes(alice, mallory, client_for):
    staff_user_for(alice)  # tenant staff, not a superuser
    for principal in (alice, mallory):
        response = client_for(principal).patch(ROUTE, {"maxRunningTurns": 10**6}, format="json")
        assert response.status_code == 403 and response.json()["error"] == "superuser_required"
    assert Tenant.objects.get(slug="acme").max_running_turns is None
    assert client_for(mallory).patch("/api/v1/tenants/nope", {}, format="json").status_code == 403


def test_bad_values_are_400_and_an_unknown_tenant_404(alice, client_for):
    client = client_for(superuser_principal())
    for body in (
        {"maxRunningTurns": 0},
        {"maxRunningTurns": "5"},
        {"maxRunningTurns": 2**31},
        {"monthlyBudgetUsd": -1},
        {"monthlyBudgetUsd": "lots"},
        {"maxRunningTurn": 5},
        [1],
    ):
        response = client.patch(ROUTE, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert set(response.json()) >= {"error", "message"}
    assert Tenant.objects.get(slug="acme").max_running_turns is None
    assert client.patch("/api/v1/tenants/nope", {"maxRunningTurns": 1}, format="json").status_code == 404


def test_in_the_admin_a_superuser_sets_quotas_and_tenant_staff_only_see_them(alice, admin_client):
    tenant = Tenant.objects.get(slug="acme")
    form = {"slug": "acme", "name": "Acme", "created_at_0": "2025-01-01", "created_at_1": "00:00:00"}
    saved = admin_client.post(
        admin_url(tenant, "change"), {**form, "max_running_turns": "9", "monthly_budget_usd": "3"}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    tenant.refresh_from_db()
    assert (tenant.max_running_turns, tenant.monthly_budget_usd) == (9, Decimal(3))

    staff = Client()
    staff.force_login(staff_user_for(alice))
    page = staff.get(admin_url(tenant, "change")).content.decode()
    assert 'name="max_running_turns"' not in page and "Max running turns" in page
    staff.post(admin_url(tenant, "change"), {**form, "max_running_turns": "100000", "monthly_budget_usd": ""})
    tenant.refresh_from_db()
    assert (tenant.max_running_turns, tenant.monthly_budget_usd) == (9, Decimal(3))
