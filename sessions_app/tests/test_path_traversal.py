"""Path traversal in every place a caller or an agent names a file (RELIABILITY.md §1
row 13): workspace files sent with a message, ``ctx.host.files`` (StoredFile), and the
artifact routes. Hostile names are refused (400, or the FileSystem's ``invalid path``),
or resolve inside the caller's own namespace; nothing lands anywhere else."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.discovery import discover
from agents.registry import get_agent
from agents.runtime.fs import FileSystemError, NotFoundError, normalize
from agents.runtime.workspace import WorkspacePathError, prepare_workspace
from agents.tests.trees import INSTRUCTIONS, write_tree
from sessions_app.host import host_for_agent
from sessions_app.models import Artifact, Session, StoredFile, Turn
from sessions_app.tests.factories import SessionFactory

# Names that would leave the workspace (or the caller's namespace), or that no file can have.
TRAVERSAL = [
    "../escape.txt",
    "../../../../etc/passwd",
    "/etc/passwd",
    "a/../../escape.txt",
    "..\\..\\escape.txt",
    "a\\..\\..\\escape.txt",
    "....//escape.txt",
    "./../escape.txt",
    "a\x00b.txt",
    "memory/notes.md",
    ".",
    "..",
    "",
]
# Encoded and overlong forms are not decoded by anyone: they are odd but literal names.
LITERAL = [
    "%2e%2e%2fescape.txt",
    "%252e%252e%252fescape.txt",
    "..%2f..%2fescape.txt",
    "..%c0%af..%c0%afescape.txt",
    "\xc0\xae\xc0\xae/escape.txt",
    "link_out/secret.txt",
]


# --- workspace files sent with a message -----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", TRAVERSAL)
def test_a_traversal_name_in_workspace_files_is_400_on_start_and_follow_up(alice, client_for, path):
    client = client_for(alice)
    body = {"message": "hi", "workspaceFiles": {path: "x"}}
    assert client.post("/weather/v1/session", body, format="json").status_code == 400
    assert not Session.objects.exists()
    session = SessionFactory(principal=alice, agent=get_agent("weather"))
    assert client.post(f"/weather/v1/session/{session.pk}", body, format="json").status_code == 400
    assert not Turn.objects.filter(session=session).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("path", LITERAL)
def test_an_encoded_name_is_taken_literally_inside_the_workspace(alice, client_for, path):
    response = client_for(alice).post(
        "/weather/v1/session", {"message": "hi", "workspaceFiles": {path: "x"}}, format="json"
    )
    assert response.status_code == 201
    assert list(Turn.objects.get().attachments) == [path]


HOSTILE = st.lists(st.sampled_from(["..", ".", "", "a", "b", "\\", "%2e", "memory", "\x00", "/", "x" * 70]), max_size=6)


def test_prepare_workspace_writes_inside_the_workspace_or_refuses(tmp_path):
    """Whatever the API let through (or a worker is handed), the workspace writer itself
    refuses anything that would land outside the directory."""
    surface, loader = discover(write_tree(tmp_path / "demo", INSTRUCTIONS))

    @settings(max_examples=60, deadline=None, database=None)
    @given(parts=HOSTILE, absolute=st.booleans())
    def run(parts: list[str], absolute: bool) -> None:
        name = ("/" if absolute else "") + "/".join(parts)
        with tempfile.TemporaryDirectory() as scratch:
            top = Path(scratch)
            (top / "outside").mkdir()
            try:
                prepare_workspace(top / "ws", surface, "x", {name: "sent"})
            except (WorkspacePathError, OSError):
                pass  # refused, or a name the file system itself cannot hold
            assert sorted(path.name for path in top.iterdir() if path.name != "ws") == ["outside"]
            assert not any((top / "outside").iterdir())

    try:
        run()
    finally:
        loader.unload()


# --- ctx.host.files (StoredFile) ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_host_files_resolve_every_name_inside_the_callers_own_namespace(alice, mallory):
    weather = get_agent("weather")
    mine = host_for_agent(alice.tenant_id, weather).files
    theirs = host_for_agent(mallory.tenant_id, weather).files
    async_to_sync(theirs.write)("/etc/passwd", b"mallory's", scope="deployment")
    for path in [p for p in TRAVERSAL + LITERAL if "\x00" not in p]:
        async_to_sync(mine.write)(path, b"alice's", scope="deployment")
        assert async_to_sync(mine.read)(path, scope="deployment")[0] == b"alice's"
        assert StoredFile.objects.filter(tenant=alice.tenant, path=normalize(path)).exists()
        # The same name from another tenant names that tenant's own file, or nothing.
        try:
            other = async_to_sync(theirs.read)(path, scope="deployment")[0]
        except NotFoundError:
            other = None
        assert other in (None, b"mallory's"), path
    assert all(row.path == normalize(row.path) for row in StoredFile.objects.all())
    assert StoredFile.objects.get(tenant=mallory.tenant).content == b"mallory's"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["a\x00b", "/x/\x00", "\udc80", "/ok/\ud800"])
def test_host_files_refuse_names_no_file_can_have(alice, path):
    files = host_for_agent(alice.tenant_id, get_agent("weather")).files
    for operation in (
        lambda: files.write(path, b"x", scope="deployment"),
        lambda: files.read(path, scope="deployment"),
        lambda: files.delete(path, scope="deployment"),
        lambda: files.list(path, scope="deployment"),
    ):
        with pytest.raises(FileSystemError, match=r"^invalid path: "):
            asyncio.run(operation())
    assert not StoredFile.objects.exists()


# --- artifact routes ---------------------------------------------------------------------------


@pytest.fixture
def artifact(db, alice):
    session = SessionFactory(principal=alice, agent=get_agent("weather"))
    return Artifact.objects.create(
        session=session, kind="report", name="../../etc/passwd", content=b"report", size=6, content_type="text/plain"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "raw",
    [
        "..",
        "%2e%2e",
        "%252e%252e",
        "..%5c..%5cetc",
        "..%00",
        "%c0%ae%c0%ae",
        "art_..",
        "..%2f..%2fetc%2fpasswd",
        "../../etc/passwd",
        "%2fetc%2fpasswd",
    ],
)
def test_a_traversal_string_as_an_artifact_id_is_400_or_404_and_serves_nothing(alice, client_for, artifact, raw):
    response = client_for(alice).get(f"/weather/v1/artifacts/{raw}/content")
    assert response.status_code in (400, 404), (raw, response.status_code)
    assert response["Content-Type"] == "application/json"
    assert b"report" not in response.content and b"root:" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "filename"),
    [
        ("../../etc/passwd", 'filename="passwd"'),
        ("..\\..\\boot.ini", 'filename="boot.ini"'),
        ('evil"\r\nSet-Cookie: x=1', 'filename="evilSet-Cookie: x=1"'),
        ("/", 'filename="artifact"'),
        ("...", 'filename="artifact"'),
        (".bashrc", 'filename="bashrc"'),
        ("rapport été.pdf", "filename*=utf-8''rapport%20%C3%A9t%C3%A9.pdf"),
    ],
)
def test_artifact_content_is_an_attachment_with_a_safe_file_name(alice, client_for, artifact, name, filename):
    Artifact.objects.filter(pk=artifact.pk).update(name=name, content_type="text/html\r\nX-Injected: 1")
    response = client_for(alice).get(f"/weather/v1/artifacts/{artifact.pk}/content")
    assert response.status_code == 200
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;") and filename in disposition
    assert "\r" not in disposition and "\n" not in disposition
    assert response["Content-Type"] == "application/octet-stream"  # a malformed type is not echoed
    assert "X-Injected" not in response.headers
    assert response.content == b"report"


# --- seeds --------------------------------------------------------------------------------------


def test_a_seed_symlink_leading_out_of_the_agent_folder_is_not_seeded(tmp_path):
    secret = tmp_path / "server-secret.txt"
    secret.write_text("server secret")
    folder = write_tree(tmp_path / "demo", {**INSTRUCTIONS, "agent/sandbox/workspace/ok.md": "fine"})
    workspace = folder / "agent" / "sandbox" / "workspace"
    (workspace / "leak.txt").symlink_to(secret)
    (workspace / "dir_leak").symlink_to(tmp_path, target_is_directory=True)
    (workspace / "inner.md").symlink_to(workspace / "ok.md")
    surface, loader = discover(folder)
    try:
        assert sorted(surface.seeds) == ["inner.md", "ok.md"]
        assert {d.code.id for d in surface.all_diagnostics()} == {"agents.W016"}
        directory = tmp_path / "ws"
        prepare_workspace(directory, surface, "x")
        assert "server secret" not in "".join(p.read_text() for p in directory.rglob("*") if p.is_file())
    finally:
        loader.unload()
