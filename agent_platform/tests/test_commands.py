from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from agent_platform.models import ApiToken, Principal, Tenant
from agent_platform.tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().splitlines()


def test_tenant_create_makes_a_tenant():
    run("tenant", "create", "acme", "--name", "Acme Inc.")
    assert Tenant.objects.get(slug="acme").name == "Acme Inc."


def test_tenant_create_refuses_a_duplicate_or_a_bad_slug():
    TenantFactory(slug="acme")
    with pytest.raises(CommandError, match="slug"):
        run("tenant", "create", "acme")
    with pytest.raises(CommandError, match="slug"):
        run("tenant", "create", "Not A Slug")
    assert Tenant.objects.count() == 1


def test_token_create_prints_a_working_token_alone_on_the_last_line():
    TenantFactory(slug="acme")
    lines = run("token", "create", "acme", "ci-bot")
    token = lines[-1]
    assert token.startswith("apt_") and " " not in token
    assert Principal.objects.filter(tenant__slug="acme", name="ci-bot").exists()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/me").json() == {"tenant": "acme", "principal": "ci-bot", "tokenPrefix": token[:12]}


def test_a_second_token_for_the_same_principal_reuses_the_principal():
    TenantFactory(slug="acme")
    first = run("token", "create", "acme", "ci-bot")[-1]
    second = run("token", "create", "acme", "ci-bot")[-1]
    assert first != second
    assert Principal.objects.filter(name="ci-bot").count() == 1
    assert ApiToken.objects.filter(principal__name="ci-bot").count() == 2


def test_token_create_for_an_unknown_tenant_says_how_to_make_it():
    with pytest.raises(CommandError, match="tenant create nope"):
        run("token", "create", "nope", "ci-bot")


def test_token_revoke_stops_the_token_working():
    TenantFactory(slug="acme")
    token = run("token", "create", "acme", "ci-bot")[-1]
    run("token", "revoke", token[:12])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/me").status_code == 401
    assert run("token", "list", "acme")[0].split("\t")[2] == "revoked"


def test_token_create_takes_scopes_and_an_expiry_and_list_shows_them():
    TenantFactory(slug="acme")
    token = run("token", "create", "acme", "reader", "--scopes", "read", "--expires-in-days", "30")[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/agents").status_code == 200
    assert client.post("/api/v1/tokens", {}, format="json").json()["error"] == "insufficient_scope"
    [listed] = run("token", "list", "acme")
    prefix, principal, state, _, scopes, expires = listed.split("\t")
    assert (prefix, principal, state, scopes) == (token[:12], "reader", "active", "read")
    assert expires.startswith(str(timezone.now().year)) or expires.startswith(str(timezone.now().year + 1))


@pytest.mark.parametrize("options", [["--scopes", "admin"], ["--scopes", ""], ["--expires-in-days", "0"]], ids=str)
def test_token_create_refuses_an_unknown_scope_or_a_bad_expiry(options):
    TenantFactory(slug="acme")
    with pytest.raises(CommandError):
        run("token", "create", "acme", "reader", *options)


def test_tenant_add_staff_links_a_staff_account_to_a_principal():
    TenantFactory(slug="acme")
    run("tenant", "add-staff", "acme", "carol")
    user = get_user_model().objects.get(username="carol")
    assert user.is_staff and not user.is_superuser
    assert user.principal.tenant.slug == "acme"
    assert user.has_perm("sessions_app.view_session")
    assert not user.has_perm("agent_platform.add_tenant")


def test_a_superuser_linked_with_add_staff_gets_a_token_for_the_operator_routes():
    TenantFactory(slug="ops")
    get_user_model().objects.create_superuser("root", password=None)  # no password: no slow hashing
    run("tenant", "add-staff", "ops", "root")
    token = run("token", "create", "ops", "root", "--scopes", "read")[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert [tenant["slug"] for tenant in client.get("/api/v1/tenants").json()["tenants"]] == ["ops"]
