"""Hostile tenant staff cannot make the platform import code of their choosing.

The attack: a staff user of tenant A fills a session workspace through ``workspaceFiles``
with an agent tree, then adds an ``Agent`` in the admin whose path is that workspace; the
next request would import it inside the serving process (database credentials,
``SECRET_KEY``) and it could read another tenant's data. No admin form has a path field:
a deployed agent's tree is an uploaded revision (the upload form is tested here too), a
shared agent's path is the registry's, and nothing is imported from a path a row names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from agent_platform.conf import platform_settings, workspaces_dir
from agent_platform.tests.factories import staff_user_for
from agents.models import Agent, AgentSource
from agents.tests.deploying import tar_gz
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


# --- no form has a path field; what a row's path says is never imported --------------------------


def test_staff_add_a_deployed_agent_without_any_path(alice, planted_workspace, client_for):
    client = staff(alice)
    page = client.get("/admin/agents/agent/add/")
    assert page.status_code == 200 and 'name="path"' not in page.content.decode()
    response = client.post("/admin/agents/agent/add/", add_form("acme-steal", planted_workspace, alice.tenant_id))
    assert response.status_code == 302, response.content.decode()[:2000]
    row = Agent.objects.get(slug="acme-steal")
    assert (row.tenant, row.source, row.path) == (alice.tenant, AgentSource.DEPLOYMENT, "")
    assert client_for(alice).get("/acme-steal/v1/info").status_code == 404  # nothing deployed
    assert not imported(planted_workspace)


def test_a_superuser_cannot_point_an_agent_at_a_folder_either(admin_client, alice, agents_root, planted_workspace):
    page = admin_client.get("/admin/agents/agent/add/")
    assert 'name="path"' not in page.content.decode()
    response = admin_client.post("/admin/agents/agent/add/", add_form("acme-x", planted_workspace, alice.tenant_id))
    assert response.status_code == 302
    assert Agent.objects.get(slug="acme-x").path == ""
    assert not imported(planted_workspace)


def test_a_shared_name_or_a_reserved_slug_is_refused_in_the_admin(admin_client, alice, agents_root):
    for slug, message in [("good", "shared agent"), ("admin", "reserved"), ("-dash", "must be letters")]:
        response = admin_client.post("/admin/agents/agent/add/", add_form(slug, "", alice.tenant_id))
        assert response.status_code == 200 and message in response.content.decode(), slug
    assert not Agent.objects.filter(source=AgentSource.DEPLOYMENT).exists()


@pytest.mark.parametrize("target", ["/etc", "workspace"])
def test_staff_cannot_repoint_or_change_an_agent(alice, agents_root, planted_workspace, target):
    own = AgentFactory(slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path="")
    path = planted_workspace if target == "workspace" else target
    response = staff(alice).post(f"/admin/agents/agent/{own.pk}/change/", add_form("acme-own", path, alice.tenant_id))
    assert response.status_code == 403
    own.refresh_from_db()
    assert own.path == ""


def test_staff_cannot_delete_an_agent(alice, agents_root):
    own = AgentFactory(slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path="")
    response = staff(alice).post(f"/admin/agents/agent/{own.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Agent.objects.filter(pk=own.pk).exists()


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


# --- the deployment upload form ------------------------------------------------------------------


def test_staff_upload_a_revision_see_its_diagnostics_and_activate_it(alice, mallory, agents_root, client_for, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents.models import Revision

    settings.STORAGES = {
        **settings.STORAGES,
        "deployments": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(agents_root.parent / "store")},
        },
    }
    own = AgentFactory(slug="acme-own", tenant=alice.tenant, source=AgentSource.DEPLOYMENT, path="")
    AgentFactory(slug="umbrella-own", tenant=mallory.tenant, source=AgentSource.DEPLOYMENT, path="")
    client = staff(alice)
    page = client.get("/admin/agents/revision/add/").content.decode()
    assert "acme-own" in page and "umbrella-own" not in page

    def post(tree: str, activate: bool):
        archive = SimpleUploadedFile("tree.tar.gz", tar_gz(tree), content_type="application/gzip")
        form = {"agent": str(own.pk), "archive": archive, **({"activate": "on"} if activate else {})}
        return client.post("/admin/agents/revision/add/", form, follow=True)

    broken = post("broken", activate=True).content.decode()
    assert "agents.E001" in broken and "this tree fails to import" in broken and "was not activated" in broken
    assert client_for(alice).get("/acme-own/v1/health").status_code == 404
    assert "is active" in post("v1", activate=True).content.decode()
    assert client_for(alice).get("/acme-own/v1/health").status_code == 200
    own.refresh_from_db()
    assert own.active_revision == Revision.objects.get(status="ready")

    garbage = SimpleUploadedFile("x.tar.gz", b"not an archive")
    refused = client.post("/admin/agents/revision/add/", {"agent": str(own.pk), "archive": garbage})
    assert refused.status_code == 200 and "neither a gzip" in refused.content.decode()
