"""``/api/v1/agents/<slug>/secrets``, the admin's write-only form, the ``secrets`` command,
and what ``ctx.secrets`` and the packs resolve a name to (store, then for shared agents
the environment and ``NAME_FILE``), driven through the API as a caller would."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import uuid

import pytest
from cryptography.fernet import Fernet
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from agent_platform.models import Principal
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, admin_url, staff_user_for
from agents.models import Agent, AgentSecret
from agents.registry import get_agent
from agents.secrets import resolve
from agents.tests.deploying import deployed_agent

pytestmark = pytest.mark.django_db

CANARY = "sk-CANARY-" + uuid.uuid4().hex


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.fixture
def served(live_agents_dir, settings):
    """AGENTS_DIR holds the test trees (``vault`` declares VAULT_TOKEN and VAULT_FILE_TOKEN)."""
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    return live_agents_dir


@pytest.fixture
def ops(db) -> Principal:
    """Staff of the operator's tenant (``local``), which owns the shared agents' secrets."""
    principal = PrincipalFactory(tenant=TenantFactory(slug="local"), name="ops")
    staff_user_for(principal)
    return principal


@pytest.fixture
def acme_vault(served, alice) -> Agent:
    """A private agent of alice's tenant (the vault tree, as a deployment would serve it)."""
    return deployed_agent(alice.tenant, "vault-acme", served / "vault")


def url(slug: str, name: str | None = None) -> str:
    return f"/api/v1/agents/{slug}/secrets" + (f"/{name}" if name else "")


def put(client: APIClient, slug: str, name: str, value: object) -> object:
    return client.put(url(slug, name), {"value": value}, format="json")


def peek(client: APIClient, slug: str, name: str = "VAULT_TOKEN") -> dict:
    response = client.post(f"/{slug}/v1/tools/peek", {"input": {"name": name}}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["result"]


def test_staff_set_list_replace_and_delete_a_secret_and_no_answer_carries_a_value(alice, client_for, acme_vault):
    staff_user_for(alice)
    client = client_for(alice)

    first = put(client, "vault-acme", "VAULT_TOKEN", CANARY)
    assert first.status_code == 200, first.content
    assert set(first.json()) == {"name", "updatedAt"} and first.json()["name"] == "VAULT_TOKEN"
    again = put(client, "vault-acme", "VAULT_TOKEN", CANARY + "-2")
    listed = client.get(url("vault-acme"))

    assert listed.status_code == 200
    assert listed.json() == {"secrets": [{"name": "VAULT_TOKEN", "updatedAt": again.json()["updatedAt"]}]}
    assert all(CANARY not in response.content.decode() for response in (first, again, listed))
    row = AgentSecret.objects.get(agent=acme_vault)
    assert CANARY not in row.ciphertext and row.tenant_id == alice.tenant_id  # encrypted at rest
    assert CANARY not in repr(row) + str(row)
    assert resolve("VAULT_TOKEN", agent=acme_vault) == CANARY + "-2"

    assert client.delete(url("vault-acme", "VAULT_TOKEN")).status_code == 204
    missing = client.delete(url("vault-acme", "VAULT_TOKEN"))
    assert missing.status_code == 404 and missing.json()["error"] == "secret_not_found"
    assert client.get(url("vault-acme")).json() == {"secrets": []}
    assert resolve("VAULT_TOKEN", agent=acme_vault) is None


def test_another_tenant_gets_404_on_every_route_and_changes_nothing(alice, mallory, client_for, acme_vault):
    staff_user_for(alice)
    staff_user_for(mallory)
    put(client_for(alice), "vault-acme", "VAULT_TOKEN", CANARY)
    stranger = client_for(mallory)

    answers = [
        stranger.get(url("vault-acme")),
        put(stranger, "vault-acme", "VAULT_TOKEN", "mallory's"),
        stranger.delete(url("vault-acme", "VAULT_TOKEN")),
    ]

    assert [answer.status_code for answer in answers] == [404, 404, 404]
    assert all(answer.json()["error"] == "agent_not_found" for answer in answers)
    assert resolve("VAULT_TOKEN", agent=acme_vault) == CANARY


def test_only_tenant_staff_manage_secrets_and_a_shared_agents_belong_to_the_operators_tenant(
    alice, bob, ops, client_for, acme_vault
):
    not_staff = client_for(bob)  # acme, no staff account
    refused = [not_staff.get(url("vault-acme")), put(not_staff, "vault-acme", "VAULT_TOKEN", CANARY)]
    assert {(answer.status_code, answer.json()["error"]) for answer in refused} == {(403, "not_tenant_staff")}

    staff_user_for(alice)
    shared = put(client_for(alice), "vault", "VAULT_TOKEN", CANARY)  # vault is an AGENTS_DIR agent
    assert (shared.status_code, shared.json()["error"]) == (403, "not_agent_owner")

    assert put(client_for(ops), "vault", "VAULT_TOKEN", CANARY).status_code == 200
    assert AgentSecret.objects.get(name="VAULT_TOKEN").tenant.slug == "local"


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("1_STARTS_WITH_A_DIGIT", {"value": CANARY}),
        ("has-a-dash", {"value": CANARY}),
        ("X" * 129, {"value": CANARY}),
        ("VAULT_TOKEN", {"value": ""}),
        ("VAULT_TOKEN", {"value": 42}),
        ("VAULT_TOKEN", {"value": CANARY * 2000}),
        ("VAULT_TOKEN", {"secret": CANARY}),
        ("VAULT_TOKEN", [CANARY]),
    ],
)
def test_a_bad_name_or_value_is_400_and_the_answer_never_quotes_the_value(ops, client_for, served, name, body):
    response = client_for(ops).put(url("vault", name), body, format="json")

    assert response.status_code == 400, response.content
    assert set(response.json()) >= {"error", "message"}
    assert CANARY not in response.content.decode()
    assert not AgentSecret.objects.exists()


def test_ctx_secrets_holds_the_declared_names_from_the_store_then_the_environment_then_name_file(
    alice, ops, client_for, served, monkeypatch, tmp_path
):
    caller = client_for(alice)
    assert peek(caller, "vault") == {"names": [], "set": False, "digest": None}

    secret_file = tmp_path / "token"
    secret_file.write_text("from-a-file\n")
    monkeypatch.setenv("VAULT_FILE_TOKEN_FILE", str(secret_file))
    monkeypatch.setenv("VAULT_TOKEN", "from-the-environment")
    monkeypatch.setenv("UNDECLARED_TOKEN", "never-seen")
    assert peek(caller, "vault", "VAULT_FILE_TOKEN")["digest"] == digest("from-a-file")
    assert peek(caller, "vault")["digest"] == digest("from-the-environment")

    put(client_for(ops), "vault", "VAULT_TOKEN", "from-the-store")  # set while served: the next call sees it
    seen = peek(caller, "vault")
    assert seen == {"names": ["VAULT_FILE_TOKEN", "VAULT_TOKEN"], "set": True, "digest": digest("from-the-store")}
    assert peek(caller, "vault", "UNDECLARED_TOKEN")["set"] is False

    tampered = caller.post("/vault/v1/tools/tamper", {"input": {}}, format="json").json()["result"]
    assert tampered == {"write": "refused", "undeclared": False}
    assert caller.get("/vault/v1/channels/desk/names").json() == {"names": ["VAULT_FILE_TOKEN", "VAULT_TOKEN"]}


def test_a_deployed_agent_never_reads_the_platforms_environment(alice, client_for, acme_vault, monkeypatch):
    monkeypatch.setenv("VAULT_TOKEN", "the-platform's-own")
    staff_user_for(alice)
    client = client_for(alice)
    assert peek(client, "vault-acme")["set"] is False

    put(client, "vault-acme", "VAULT_TOKEN", CANARY)

    assert peek(client, "vault-acme")["digest"] == digest(CANARY)


def test_the_github_pack_verifies_deliveries_with_the_stored_secret_by_name(ops, client_for, served, monkeypatch):
    monkeypatch.setenv("HUBBOT_WEBHOOK_SECRET", "the-environment's")
    body = json.dumps({"zen": "Mind your words, they are important."}).encode()

    def deliver(secret: str) -> int:
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers = {"HTTP_X_GITHUB_EVENT": "ping", "HTTP_X_GITHUB_DELIVERY": str(uuid.uuid4())}
        return (
            APIClient()
            .post(
                "/hubbot/v1/channels/github/webhook",
                data=body,
                content_type="application/json",
                HTTP_X_HUB_SIGNATURE_256=signature,
                **headers,
            )
            .status_code
        )

    assert deliver("the-environment's") == 200
    put(client_for(ops), "hubbot", "HUBBOT_WEBHOOK_SECRET", "the-store's")  # the store wins, from the next delivery

    assert (deliver("the-store's"), deliver("the-environment's")) == (200, 401)


def test_the_admin_form_is_write_only_and_its_history_names_no_value(alice, mallory, acme_vault, served):
    staff = Client()
    staff.force_login(staff_user_for(alice))
    other = deployed_agent(mallory.tenant, "vault-umbrella", served / "vault")
    add = "/admin/agents/agentsecret/add/"

    form = staff.get(add).content.decode()
    assert "vault-acme" in form and "vault-umbrella" not in form and ">vault<" not in form
    refused = staff.post(add, {"agent": acme_vault.pk, "name": "bad-name", "value": CANARY})
    assert refused.status_code == 200 and CANARY not in refused.content.decode()  # re-shown without the value
    foreign = staff.post(add, {"agent": other.pk, "name": "VAULT_TOKEN", "value": CANARY})
    assert foreign.status_code == 200 and not AgentSecret.objects.exists()

    assert staff.post(add, {"agent": acme_vault.pk, "name": "VAULT_TOKEN", "value": CANARY}).status_code == 302
    row = AgentSecret.objects.get()
    assert staff.post(admin_url(row, "change"), {"value": CANARY + "-2"}).status_code == 302
    assert staff.post(admin_url(row, "change"), {"value": ""}).status_code == 302  # empty: kept

    pages = [
        staff.get(page) for page in ("/admin/agents/agentsecret/", admin_url(row, "change"), admin_url(row, "history"))
    ]
    assert all(page.status_code == 200 and CANARY not in page.content.decode() for page in pages)
    assert "VAULT_TOKEN" in pages[0].content.decode()
    history = " ".join(f"{entry.object_repr} {entry.change_message}" for entry in LogEntry.objects.all())
    assert CANARY not in history and "value" in history
    assert resolve("VAULT_TOKEN", agent=acme_vault) == CANARY + "-2"


def test_the_command_sets_lists_rotates_the_key_and_a_lost_key_reads_as_unset(ops, served, settings, monkeypatch):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.PLATFORM = {**settings.PLATFORM, "SECRETS_KEYS": (old,)}
    monkeypatch.setattr("sys.stdin", io.StringIO(CANARY + "\n"))
    out = io.StringIO()
    call_command("secrets", "set", "vault", "VAULT_TOKEN", stdout=out)
    call_command("secrets", "list", "vault", stdout=out)
    assert "VAULT_TOKEN" in out.getvalue() and CANARY not in out.getvalue()
    vault = get_agent("vault")
    assert vault is not None and resolve("VAULT_TOKEN", agent=vault) == CANARY

    settings.PLATFORM = {**settings.PLATFORM, "SECRETS_KEYS": (new, old)}  # the new key first, the old still read
    call_command("secrets", "rotate", stdout=out)
    assert "Re-encrypted 1 secret(s)" in out.getvalue()
    settings.PLATFORM = {**settings.PLATFORM, "SECRETS_KEYS": (new,)}  # the old key retired
    assert resolve("VAULT_TOKEN", agent=vault) == CANARY

    settings.PLATFORM = {**settings.PLATFORM, "SECRETS_KEYS": (old,)}  # a key the value was never under
    assert resolve("VAULT_TOKEN", agent=vault) is None
