"""Deployments through the API: creating an agent, uploading revisions (valid, broken,
hostile archives), activating and rolling back, and who may do any of it."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from agent_platform.tests.factories import staff_user_for
from agents.models import Agent
from agents.tests.deploying import TREES, member, tar_gz, tar_with, zip_with, zipped

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path, settings) -> Path:
    """A revision store and VAR_DIR of this test's own, and an AGENTS_DIR with ``weather``."""
    agents = tmp_path / "agents"
    (agents / "weather" / "agent").mkdir(parents=True)
    (agents / "weather" / "agent" / "instructions.md").write_text("Weather.")
    settings.PLATFORM = {**settings.PLATFORM, "VAR_DIR": tmp_path / "var", "AGENTS_DIR": agents}
    settings.STORAGES = {
        **settings.STORAGES,
        "deployments": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "store")},
        },
    }
    return tmp_path


@pytest.fixture
def carol(alice, client_for):
    """Alice as tenant staff: her token may deploy."""
    staff_user_for(alice)
    return client_for(alice)


def make_agent(client, slug="helpdesk"):
    response = client.post("/api/v1/agents", {"slug": slug}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def upload(client, body: bytes, slug="helpdesk", content_type="application/gzip"):
    return client.generic("POST", f"/api/v1/agents/{slug}/deployments", body, content_type=content_type)


def outside_files(root: Path) -> list[Path]:
    """Files anywhere under the test's folder other than the store and the unpacked revisions."""
    kept = {root / "store", root / "var" / "revisions", root / "agents"}
    return [p for p in root.rglob("*") if p.is_file() and not any(k == p or k in p.parents for k in kept)]


# --- the life cycle, short of sessions (those are in test_deployment_lifecycle.py) ------------


def test_create_upload_activate_and_roll_back(store, carol):
    assert make_agent(carol) == {"slug": "helpdesk", "source": "deployment", "shared": False, "activeDeployment": None}
    assert carol.get("/helpdesk/v1/health").status_code == 404  # nothing deployed yet

    first = upload(carol, tar_gz("v1"))
    assert first.status_code == 201, first.content
    v1 = first.json()
    assert v1["status"] == "ready" and v1["diagnostics"] == [] and len(v1["hash"]) == 64 and not v1["active"]
    assert upload(carol, zipped("v1")).json()["id"] == v1["id"]  # same files, same revision (200)

    assert carol.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate").status_code == 200
    assert carol.get("/helpdesk/v1/tools/version").status_code == 200

    v2 = upload(carol, zipped("v2"), content_type="application/zip").json()
    assert v2["hash"] != v1["hash"]
    assert carol.post(f"/api/v1/agents/helpdesk/deployments/{v2['id']}/activate").json()["active"] is True
    assert carol.post("/helpdesk/v1/tools/version", {"input": {}}, format="json").json()["result"] == "v2"

    listed = carol.get("/api/v1/agents/helpdesk/deployments").json()["deployments"]
    assert [(d["id"], d["active"]) for d in listed] == [(v2["id"], True), (v1["id"], False)]
    assert listed[0]["uploadedBy"] == "alice"

    carol.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate")  # roll back
    assert carol.post("/helpdesk/v1/tools/version", {"input": {}}, format="json").json()["result"] == "v1"
    assert [a["activeDeployment"] for a in carol.get("/api/v1/agents").json()["agents"] if a["slug"] == "helpdesk"] == [
        v1["id"]
    ]


def test_a_broken_tree_is_422_with_diagnostics_and_the_active_revision_keeps_serving(store, carol):
    make_agent(carol)
    v1 = upload(carol, tar_gz("v1")).json()
    carol.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate")
    broken = upload(carol, tar_gz("broken"))
    assert broken.status_code == 422
    body = broken.json()
    assert body["error"] == "deployment_invalid" and body["status"] == "invalid"
    assert [d["code"] for d in body["diagnostics"]] == ["agents.E001"]
    assert "this tree fails to import" in body["diagnostics"][0]["message"]
    refused = carol.post(f"/api/v1/agents/helpdesk/deployments/{body['id']}/activate")
    assert refused.status_code == 422 and refused.json()["error"] == "deployment_invalid"
    assert carol.post("/helpdesk/v1/tools/version", {"input": {}}, format="json").json()["result"] == "v1"


def test_the_diagnostics_are_agent_validates(store, carol, capsys):
    from django.core.management import CommandError, call_command

    make_agent(carol)
    body = upload(carol, tar_gz("broken")).json()
    with pytest.raises(CommandError):
        call_command("agent", "validate", "--dir", str(TREES / "broken"))
    printed = capsys.readouterr().out
    for diagnostic in body["diagnostics"]:
        assert f"{diagnostic['severity'].upper()} {diagnostic['code']} " in printed
        assert diagnostic["message"] in printed


def test_what_a_tree_prints_while_discovered_is_not_its_diagnostics(store, carol):
    make_agent(carol)
    response = upload(carol, tar_gz("printer"))
    assert response.status_code == 201, response.content
    assert response.json()["diagnostics"] == []


def test_a_multipart_upload_works_too(store, carol):
    from django.core.files.uploadedfile import SimpleUploadedFile

    make_agent(carol)
    archive = SimpleUploadedFile("tree.tar.gz", tar_gz("v1"), content_type="application/gzip")
    response = carol.post("/api/v1/agents/helpdesk/deployments", {"archive": archive}, format="multipart")
    assert response.status_code == 201, response.content
    assert carol.post("/api/v1/agents/helpdesk/deployments", {}, format="multipart").status_code == 400


# --- archive attacks: 400, nothing written outside the revision store --------------------------


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


TAR_ATTACKS = {
    "absolute": [member("/tmp/evil.py")],
    "dotdot": [member("agent/../../evil.py")],
    "dotdot-root": [member("../evil.py")],
    "symlink": [_link("agent/tools/link.py", "/etc/passwd", tarfile.SYMTYPE)],
    "hardlink": [_link("agent/tools/hard.py", "/etc/passwd", tarfile.LNKTYPE)],
    "device": [member("agent/dev", b"", type=tarfile.CHRTYPE, devmajor=1, devminor=3)],
    "fifo": [member("agent/fifo", b"", type=tarfile.FIFOTYPE)],
    "outside-root": [member("setup.py")],
}


@pytest.mark.parametrize("attack", sorted(TAR_ATTACKS))
def test_a_hostile_tar_is_400(store, carol, attack):
    make_agent(carol)
    response = upload(carol, tar_with(*TAR_ATTACKS[attack]))
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "archive_refused"
    assert not Agent.objects.get(slug="helpdesk").revisions.exists()
    assert outside_files(store) == []
    assert not Path("/tmp/evil.py").exists()


def _zip_link() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("agent/tools/link.py")
    info.external_attr = 0o120777 << 16
    return info


ZIP_ATTACKS = {
    "absolute": [("/tmp/evil.py", b"x")],
    "dotdot": [("agent/../../evil.py", b"x")],
    "symlink": [(_zip_link(), b"/etc/passwd")],
    "outside-root": [("setup.py", b"x")],
}


def _unknown_compression(archive: bytes) -> bytes:
    """``archive`` with every member's compression method set to 99, which zipfile does
    not know (it raises NotImplementedError on reading): in each local and central header."""
    patched = bytearray(archive)
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = patched.find(signature)
        while at != -1:
            patched[at + offset : at + offset + 2] = (99).to_bytes(2, "little")
            at = patched.find(signature, at + 4)
    return bytes(patched)


def test_a_zip_of_a_compression_method_zipfile_does_not_know_is_400(store, carol):
    make_agent(carol)
    response = upload(carol, _unknown_compression(zip_with()), content_type="application/zip")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "archive_refused"
    assert "cannot be read" in response.json()["message"]
    assert outside_files(store) == []


@pytest.mark.parametrize("attack", sorted(ZIP_ATTACKS))
def test_a_hostile_zip_is_400(store, carol, attack):
    make_agent(carol)
    response = upload(carol, zip_with(*ZIP_ATTACKS[attack]), content_type="application/zip")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "archive_refused"
    assert outside_files(store) == []


def test_archive_bombs_are_400_by_size_and_by_file_count(store, carol, settings):
    make_agent(carol)
    settings.PLATFORM = {**settings.PLATFORM, "DEPLOY_MAX_UNPACKED_BYTES": 1_000_000, "DEPLOY_MAX_FILES": 50}
    zeros = b"\0" * 5_000_000  # compresses to a few kB
    for body, kind in [
        (tar_with(member("agent/zeros.bin", zeros)), "application/gzip"),
        (zip_with(("agent/zeros.bin", zeros)), "application/zip"),
    ]:
        response = upload(carol, body, content_type=kind)
        assert response.status_code == 400 and "unpacks to more than" in response.json()["message"]
    many = [member(f"agent/lib/f{n}.txt") for n in range(60)]
    for body, kind in [
        (tar_with(*many), "application/gzip"),
        (zip_with(*[(f"agent/lib/f{n}.txt", b"x") for n in range(60)]), "application/zip"),
    ]:
        response = upload(carol, body, content_type=kind)
        assert response.status_code == 400 and "more than 50 entries" in response.json()["message"]
    assert outside_files(store) == []
    assert not (store / "store").exists() or not any((store / "store").rglob("*.*"))


def test_an_archive_over_the_cap_is_413_and_garbage_is_400(store, carol, settings):
    make_agent(carol)
    settings.PLATFORM = {**settings.PLATFORM, "DEPLOY_MAX_BYTES": 2048}
    assert upload(carol, b"\x1f\x8b" + b"z" * 4096).status_code == 413
    garbage = upload(carol, b"\x1f\x8b this is not gzip")
    assert garbage.status_code == 400 and garbage.json()["error"] == "archive_refused"
    assert upload(carol, b"plain text").status_code == 400
    assert upload(carol, b"x", content_type="text/plain").status_code == 415


# --- who may: staff only, other tenants 404, shared names win ------------------------------------


def test_only_tenant_staff_may_create_or_deploy(store, alice, bob, client_for):
    staff_user_for(alice)
    make_agent(client_for(alice))
    plain = client_for(bob)  # same tenant, not staff
    assert plain.post("/api/v1/agents", {"slug": "other"}, format="json").status_code == 403
    assert upload(plain, tar_gz("v1")).status_code == 403
    assert plain.get("/api/v1/agents/helpdesk/deployments").status_code == 200
    v1 = upload(client_for(alice), tar_gz("v1")).json()
    refused = plain.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate")
    assert refused.status_code == 403 and refused.json()["error"] == "not_tenant_staff"


def test_another_tenant_gets_404_on_all_of_it(store, carol, mallory, client_for):
    make_agent(carol)
    v1 = upload(carol, tar_gz("v1")).json()
    carol.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate")
    staff_user_for(mallory)
    theirs = client_for(mallory)
    assert theirs.get("/api/v1/agents/helpdesk/deployments").status_code == 404
    assert upload(theirs, tar_gz("v2")).status_code == 404
    assert theirs.post(f"/api/v1/agents/helpdesk/deployments/{v1['id']}/activate").status_code == 404
    assert theirs.get("/helpdesk/v1/health").status_code == 404
    assert theirs.post("/api/v1/agents", {"slug": "helpdesk"}, format="json").status_code == 409
    assert "helpdesk" not in str(theirs.get("/api/v1/agents").json())


@pytest.mark.parametrize(("slug", "status"), [("weather", 409), ("WEATHER", 409), ("admin", 400), ("-x", 400)])
def test_shared_names_win_and_bad_slugs_are_400(store, carol, slug, status):
    response = carol.post("/api/v1/agents", {"slug": slug}, format="json")
    assert response.status_code == status, response.content
    assert not Agent.objects.filter(slug=slug, source="deployment").exists()
    assert carol.post("/api/v1/agents", {"slug": 42}, format="json").status_code == 400


def test_an_unknown_deployment_is_404(store, carol):
    make_agent(carol)
    assert carol.post("/api/v1/agents/helpdesk/deployments/dep_nope/activate").status_code == 404


def test_the_deploy_command_uploads_activates_and_prints_diagnostics(store, alice, client_for):
    from django.core.management import CommandError, call_command

    out = io.StringIO()
    call_command(
        "agent", "deploy", str(TREES / "v1"), "--tenant", "acme", "--slug", "cli-bot", "--activate", stdout=out
    )
    assert "cli-bot: ok" in out.getvalue() and "is active" in out.getvalue()
    assert client_for(alice).post("/cli-bot/v1/tools/version", {"input": {}}, format="json").json()["result"] == "v1"
    out = io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("agent", "deploy", str(TREES / "broken"), "--tenant", "acme", "--slug", "cli-bot", stdout=out)
    assert failed.value.returncode == 1
    assert "ERROR agents.E001" in out.getvalue() and "this tree fails to import" in out.getvalue()
    assert client_for(alice).post("/cli-bot/v1/tools/version", {"input": {}}, format="json").json()["result"] == "v1"
    with pytest.raises(CommandError, match="shared agent"):
        call_command("agent", "deploy", str(TREES / "v1"), "--tenant", "acme", "--slug", "weather")
