"""Helpers for deployment tests: archives of the trees in ``deploy_trees/`` and the store."""

from __future__ import annotations

import io
import tarfile
import tempfile
import zipfile
from pathlib import Path

from agent_platform.models import Tenant
from agents.deployments import deploy_from_folder, pack_folder
from agents.models import Agent

TREES = Path(__file__).resolve().parent / "deploy_trees"


def deployed_agent(tenant: Tenant, slug: str, folder: Path) -> Agent:
    """A deployed agent of ``tenant`` serving ``folder``'s tree as its active revision."""
    revision, _ = deploy_from_folder(tenant, slug, folder, activate_it=True)
    assert revision.status == "ready", revision.diagnostics
    return Agent.objects.get(pk=revision.agent_id)


def tar_gz(tree: str | Path) -> bytes:
    """The tree (a name in ``deploy_trees/`` or a folder) as a .tar.gz."""
    folder = TREES / tree if isinstance(tree, str) else tree
    with tempfile.TemporaryDirectory() as scratch:
        packed = Path(scratch) / "tree.tar.gz"
        pack_folder(Path(folder), packed)
        return packed.read_bytes()


def zipped(tree: str | Path) -> bytes:
    folder = TREES / tree if isinstance(tree, str) else tree
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                bundle.write(path, path.relative_to(folder).as_posix())
    return out.getvalue()


def tar_with(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    """A .tar.gz of the v1 tree plus ``members`` as given (the attack)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        tar.add(TREES / "v1" / "agent", arcname="agent", filter=lambda i: None if "__pycache__" in i.name else i)
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def member(name: str, data: bytes = b"x", **fields: object) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size = len(data) if fields.get("type", tarfile.REGTYPE) == tarfile.REGTYPE else 0
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data if info.type == tarfile.REGTYPE else None


def zip_with(*entries: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in sorted((TREES / "v1" / "agent").rglob("*.*")):
            if "__pycache__" not in path.parts:
                bundle.write(path, "agent/" + path.relative_to(TREES / "v1" / "agent").as_posix())
        for name, data in entries:
            bundle.writestr(name, data)
    return out.getvalue()
