"""Hostile tenant staff cannot make the platform import code of their choosing.

The attack: a staff user of tenant A fills a session workspace through ``workspaceFiles``
with an agent tree, then adds an ``Agent`` in the admin whose path is that workspace; the
next request would import it inside the serving process (database credentials,
``SECRET_KEY``) and it could read another tenant's data. Agent rows are now the
operator's (superusers), a row's path must resolve inside AGENTS_DIR, and nothing
outside AGENTS_DIR is imported however a row got there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from agent_platform.conf import platform_settings, workspaces_dir
from agent_platform.tests.factories import staff_user_for
from agents.models import Agent, AgentSource
from sessions_app.tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

# The tool the attacker planted: importing it leaves a marker beside it.
STEAL = """\
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("the platform imported tenant code")

from agents.sdk import tool


@tool
def steal(ctx) -> str:
    \"\"\"Reads every tenant's sessions.\"\"\"
    return "secrets"
"""


@pytest.fixture
def agents_root(tmp_path, settings) -> Path:
    """An AGENTS_DIR with one agent, ``good``, and the VAR_DIR beside (not in) it."""
    root = tmp_path / "agents"
    (root / "good" / "agent").mkdir(parents=True)
    (root / "good" / "agent" / "instructions.md").write_text("Be brief.")
    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": root, "VAR_DIR": tmp_path / "var"}
    return root


@pytest.fixture
def planted_workspace(agents_root) -> Path:
    """A session workspace as ``workspaceFiles`` fills it: an agent tree of the attacker's."""
    workspace = workspaces_dir(platform_settings.VAR_DIR) / "ses_attacker"
    (workspace / "agent" / "tools").mkdir(parents=True)
    (workspace / "agent" / "instructions.md").write_text("Obey.")
    (workspace / "agent" / "tools" / "steal.py").write_text(STEAL)
    return workspace


def imported(workspace: Path) -> bool:
    return (workspace / "agent" / "tools" / "IMPORTED").exists()


def add_form(slug: str, path: str | Path, tenant: int | None = None) -> dict[str, str]:
    now = timezone.now()
    form = {"slug": slug, "source": "deployment", "path": str(path)}
    form.update({"created_at_0": now.strftime("%Y-%m-%d"), "created_at_1": now.strftime("%H:%M:%S")})
    if tenant is not None:
        form["tenant"] = str(tenant)
    return form


def staff(principal) -> Client:
    client = Client()
    client.force_login(staff_user_for(principal))
    return client


# --- tenant staff: no write path to Agent rows -----------------------------------------------


def test_staff_cannot_add_an_agent_pointing_at_a_session_workspace(alice, planted_workspace, client_for):
    client = staff(alice)
    assert client.get("/admin/agents/agent/add/").status_code == 403
    response = client.post("/admin/agents/agent/add/", add_form("acme-steal", planted_workspace, alice.tenant_id))
    assert response.status_code == 403
    assert not Agent.objects.filter(slug="acme-steal").exists()
    assert client_for(alice).get("/acme-steal/v1/info").status_code == 404
    assert not imported(planted_workspace)


@pytest.mark.parametrize("target", ["/etc", "workspace"])
def test_staff_cannot_repoint_their_own_agent(alice, agents_root, planted_workspace, target):
    own = AgentFactory(
        slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path=str(agents_root / "good")
    )
    path = planted_workspace if target == "workspace" else target
    client = staff(alice)
    response = client.post(f"/admin/agents/agent/{own.pk}/change/", add_form("acme-own", path, alice.tenant_id))
    assert response.status_code == 403
    own.refresh_from_db()
    assert own.path == str(agents_root / "good")


def test_staff_cannot_delete_an_agent(alice, agents_root):
    own = AgentFactory(
        slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path=str(agents_root / "good")
    )
    response = staff(alice).post(f"/admin/agents/agent/{own.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Agent.objects.filter(pk=own.pk).exists()


def test_staff_still_see_their_agents_read_only(alice, agents_root):
    own = AgentFactory(
        slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path=str(agents_root / "good")
    )
    client = staff(alice)
    assert "acme-own" in client.get("/admin/agents/agent/").content.decode()
    page = client.get(f"/admin/agents/agent/{own.pk}/change/")
    assert page.status_code == 200
    assert 'name="path"' not in page.content.decode()


# --- superusers: only folders inside AGENTS_DIR, slugs as DESIGN §3 says -------------------------


def refused(admin_client: Client, form: dict[str, str]) -> str:
    response = admin_client.post("/admin/agents/agent/add/", form)
    assert response.status_code == 200, "the form should be shown again with its errors"
    assert not Agent.objects.filter(slug=form["slug"]).exists()
    return response.content.decode()


def test_a_superuser_cannot_point_an_agent_at_a_workspace_or_outside_agents_dir(
    admin_client, alice, agents_root, planted_workspace, client_for
):
    (agents_root / "escape").symlink_to(planted_workspace, target_is_directory=True)
    (agents_root / "etc").symlink_to("/etc", target_is_directory=True)
    for path in [
        planted_workspace,
        "/etc",
        agents_root / "escape",  # under AGENTS_DIR, but a symlink that leads out
        agents_root / "etc",
        f"{agents_root}/good/../../var/workspaces/ses_attacker",
        agents_root,  # AGENTS_DIR itself is not an agent folder
    ]:
        html = refused(admin_client, add_form("acme-steal", path, alice.tenant_id))
        assert "outside AGENTS_DIR" in html, path
    (agents_root / "empty").mkdir()
    html = refused(admin_client, add_form("acme-empty", agents_root / "empty", alice.tenant_id))
    assert "holds no agent/ folder" in html
    assert client_for(alice).get("/acme-steal/v1/info").status_code == 404
    assert not imported(planted_workspace)


@pytest.mark.parametrize(
    ("slug", "message"),
    [("admin", "reserved"), ("playground", "reserved"), ("-dash", "must be letters"), ("a" * 300, "at most 100")],
)
def test_a_superuser_cannot_take_a_slug_design_refuses(admin_client, agents_root, slug, message):
    html = refused(admin_client, add_form(slug, agents_root / "good"))
    assert message in html or "longer than" in html


def test_a_superuser_adds_an_agent_folder_inside_agents_dir_and_it_is_served(
    admin_client, alice, agents_root, client_for
):
    response = admin_client.post(
        "/admin/agents/agent/add/", add_form("acme-good", agents_root / "good", alice.tenant_id)
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    row = Agent.objects.get(slug="acme-good")
    assert row.tenant == alice.tenant and row.path == str(agents_root / "good")
    assert client_for(alice).get("/acme-good/v1/health").status_code == 200


# --- however a row got there, nothing outside AGENTS_DIR is imported -----------------------------


def test_a_row_written_around_the_admin_is_not_served(alice, planted_workspace, client_for):
    Agent.objects.create(
        slug="acme-steal", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path=str(planted_workspace)
    )
    assert client_for(alice).get("/acme-steal/v1/info").status_code == 404
    assert client_for(alice).post("/acme-steal/v1/session", {"message": "hi"}, format="json").status_code == 404
    assert not imported(planted_workspace)


def test_a_symlink_in_agents_dir_leading_out_is_not_served(alice, agents_root, planted_workspace, client_for):
    (agents_root / "escape").symlink_to(planted_workspace, target_is_directory=True)
    inside = agents_root / "linked"
    shutil.copytree(agents_root / "good", agents_root / "real")
    inside.symlink_to(agents_root / "real", target_is_directory=True)  # a link that stays inside is fine
    assert client_for(alice).get("/escape/v1/info").status_code == 404
    assert not imported(planted_workspace)
    assert client_for(alice).get("/linked/v1/health").status_code == 200
    index = client_for(alice).get("/api/v1/agents").json()["agents"]
    assert [agent["slug"] for agent in index] == ["good", "linked", "real"]
