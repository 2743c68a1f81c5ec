"""Tenant deployments: agents whose trees are uploaded revisions (docs/deployments.md).

A deployed agent is made empty (``create_agent``), then given revisions: an uploaded
archive is streamed to disk, unpacked by ``agents.archives`` (which refuses anything but
plain files and folders under ``agent/`` and ``evals/``), named by the hash of its files,
kept in the revision store (the ``deployments`` storage of Django's storage API) and
validated by ``validate_revision``, which never imports the tree in this process.
``activate`` points the agent at a valid revision: new sessions use it, running ones
keep theirs (``Session.revision``). Every process unpacks a revision it needs into its
own folder from the store (``revision_folder``), so a revision activated by one process
is served by all of them at their next request, without a restart.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db import IntegrityError, transaction

from agent_platform.auth import AuthenticatedPrincipal
from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agent_platform.models import Principal, Tenant
from agents import archives
from agents.archives import ArchiveRefused, Limits
from agents.discovery.diagnostics import IMPORT_FAILED, Severity
from agents.models import Agent, AgentSource, Revision, RevisionStatus, agents_dir, slug_problem
from agents.sandbox import validate_in_sandbox

logger = logging.getLogger(__name__)

STORAGE_ALIAS = "deployments"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
VALIDATE_CHILD = Path(__file__).with_name("validate_child.py")


class InvalidSlug(DomainError):
    status, code = 400, "invalid_slug"


class SlugTaken(DomainError):
    status, code = 409, "slug_taken"


class NotTenantStaff(DomainError):
    status, code = 403, "not_tenant_staff"


class DeploymentNotFound(DomainError):
    status, code = 404, "deployment_not_found"


class DeploymentInvalid(DomainError):
    """A tree with errors: 422 with its diagnostics; nothing was activated."""

    status, code = 422, "deployment_invalid"


# --- who may deploy, and which slugs ---------------------------------------------------------


def may_deploy(user: AuthenticatedPrincipal) -> bool:
    """Tenant staff (a principal linked to an active staff account, or a superuser) and,
    in dev mode, the local developer: they administer the tenant's agents."""
    if user.sees_all_sessions:  # the loopback developer in dev mode operates the whole platform
        return True
    account = user.principal.user
    return account is not None and account.is_active and (account.is_staff or account.is_superuser)


def require_staff(user: AuthenticatedPrincipal) -> None:
    """Raises:
    NotTenantStaff: when ``user`` may not deploy."""
    if not may_deploy(user):
        raise NotTenantStaff("Only the tenant's staff may create and deploy agents.")


def shared_name_holds(slug: str) -> bool:
    """Whether ``AGENTS_DIR`` holds (or may come to serve) ``slug``: any entry of that name,
    compared without case (a case-insensitive file system serves both), shared rows too."""
    root = agents_dir()
    folded = slug.casefold()
    if root.is_dir() and any(child.name.casefold() == folded for child in root.iterdir()):
        return True
    return Agent.objects.filter(slug__iexact=slug, source=AgentSource.DIRECTORY).exists()


def create_agent(tenant: Tenant, slug: str) -> Agent:
    """A new deployed agent of ``tenant``, with no revision yet.

    Raises:
        InvalidSlug: the slug cannot be served under ``/<slug>/``.
        SlugTaken: another agent has it, or ``AGENTS_DIR`` holds it (shared names win).
    """
    if problem := slug_problem(slug):
        raise InvalidSlug(problem[:1].upper() + problem[1:] + ".")
    if shared_name_holds(slug):
        raise SlugTaken(f"The slug {slug!r} belongs to a shared agent of AGENTS_DIR; choose another.")
    try:
        with transaction.atomic():
            return Agent.objects.create(slug=slug, tenant=tenant, source=AgentSource.DEPLOYMENT, path="")
    except IntegrityError:
        raise SlugTaken(f"The slug {slug!r} is taken; choose another.") from None


def tenant_agent(tenant: Tenant, slug: str) -> Agent:
    """The deployed agent ``slug`` of ``tenant``.

    Raises:
        DeploymentNotFound: there is none (or it is another tenant's, or shared).
    """
    agent = Agent.objects.filter(slug=slug, tenant=tenant, source=AgentSource.DEPLOYMENT).first()
    if agent is None:
        raise DeploymentNotFound(f"Your tenant has no deployed agent {slug!r}.", code="agent_not_found")
    return agent


# --- the revision store ----------------------------------------------------------------------


def store() -> Storage:
    return storages[STORAGE_ALIAS]


def revisions_dir() -> Path:
    """Where this process unpacks revisions: ``<VAR_DIR>/revisions/<agent id>/<hash>/``."""
    return Path(platform_settings.VAR_DIR) / "revisions"


def _limits() -> Limits:
    return Limits(files=platform_settings.DEPLOY_MAX_FILES, bytes=platform_settings.DEPLOY_MAX_UNPACKED_BYTES)


def tree_hash(folder: Path) -> str:
    """sha256 over every file's relative path and content, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as file:
            digest.update(hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()


def _settle(incoming: Path, final: Path) -> None:
    """Move the unpacked ``incoming`` to ``final``, or drop it if another got there first."""
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        incoming.rename(final)
    except OSError:  # already there: a revision's folder never changes
        shutil.rmtree(incoming, ignore_errors=True)


def revision_folder(revision: Revision) -> Path:
    """The folder holding ``revision``'s tree in this process, unpacked from the revision
    store the first time it is needed here."""
    final = revisions_dir() / str(revision.agent_id) / revision.hash
    if (final / "agent").is_dir():
        return final
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=_ensure(revisions_dir())))
    try:
        archive = work / "archive"
        with store().open(revision.archive, "rb") as source, archive.open("wb") as out:
            shutil.copyfileobj(source, out, archives.CHUNK)
        archives.unpack(archive, work / "tree", _limits())
        _settle(work / "tree", final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# --- validation ----------------------------------------------------------------------------


def validate_revision(folder: Path, slug: str) -> list[dict[str, str]]:
    """``agent validate``'s diagnostics of the tree in ``folder`` (as ``Diagnostic.as_dict``).

    The tree is tenant code, never imported here: it is discovered in the sandbox
    (``agents.sandbox``), like the runner that will serve it; with ``PLATFORM["SANDBOX"]
    = "off"`` (dev mode only) in a child process with an empty environment, isolated
    Python (``-I``) and a time limit.
    """
    if platform_settings.SANDBOX != "off":
        return validate_in_sandbox(folder, slug)
    allow = json.dumps(list(platform_settings.OUTBOUND_ALLOW))
    seconds = platform_settings.DEPLOY_VALIDATE_SECONDS
    command = [sys.executable, "-I", str(VALIDATE_CHILD), str(PROJECT_ROOT), str(folder), slug, allow]
    try:
        done = subprocess.run(command, cwd=folder, env={}, capture_output=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        return [_failure(f"discovering the tree took longer than {seconds} s (PLATFORM_DEPLOY_VALIDATE_SECONDS)")]
    try:
        return list(json.loads(done.stdout)["diagnostics"])
    except (ValueError, KeyError, TypeError):
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        return [_failure(f"discovering the tree ended with exit code {done.returncode}: {' '.join(tail)[:500]}")]


def _failure(message: str) -> dict[str, str]:
    return {
        "severity": str(Severity.ERROR),
        "code": IMPORT_FAILED.id,
        "path": "agent",
        "message": message,
        "hint": IMPORT_FAILED.hint,
    }


def has_errors(diagnostics: list[dict[str, str]]) -> bool:
    return any(d.get("severity") == Severity.ERROR for d in diagnostics)


# --- upload and activation -----------------------------------------------------------------


def upload(agent: Agent, chunks: Iterator[bytes], principal: Principal | None) -> tuple[Revision, bool]:
    """Make a revision of ``agent`` from an archive's bytes; returns it and whether it is
    new (the same tree uploaded again is the same revision). The active revision is left
    as it is, whatever the diagnostics say.

    Raises:
        ArchiveRefused: 400 for an archive that is refused (nothing is kept), 413 past
            ``PLATFORM_DEPLOY_MAX_BYTES``.
    """
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=_ensure(revisions_dir())))
    try:
        with archives.spooled(chunks, work / "archive", platform_settings.DEPLOY_MAX_BYTES) as archive:
            kind = archives.archive_kind(archive)
            unpacked = archives.unpack(archive, work / "tree", _limits())
            digest = tree_hash(work / "tree")
            existing = Revision.objects.filter(agent=agent, hash=digest).first()
            if existing is not None:
                return existing, False
            name = f"agents/{agent.pk}/{digest}.{kind}"
            if not store().exists(name):
                with archive.open("rb") as file:
                    name = store().save(name, File(file))
            final = revisions_dir() / str(agent.pk) / digest
            _settle(work / "tree", final)
        diagnostics = validate_revision(final, agent.slug)
        status = RevisionStatus.INVALID if has_errors(diagnostics) else RevisionStatus.READY
        try:
            with transaction.atomic():
                revision = Revision.objects.create(
                    agent=agent,
                    hash=digest,
                    status=status,
                    diagnostics=diagnostics,
                    archive=name,
                    files=unpacked.files,
                    size=unpacked.bytes,
                    uploaded_by=principal,
                )
        except IntegrityError:  # the same tree, uploaded at the same time
            return Revision.objects.get(agent=agent, hash=digest), False
        logger.info(
            "agent %r: revision %s uploaded (%s)",
            agent.slug,
            revision.pk,
            status,
            extra={"agent_slug": agent.slug, "tenant_id": agent.tenant_id},
        )
        return revision, True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def upload_folder(agent: Agent, folder: Path, principal: Principal | None) -> tuple[Revision, bool]:
    """``upload`` of a folder on this machine (``agent deploy DIR``): its ``agent/`` and
    ``evals/`` packed into a tar.gz first, so it goes through the same checks."""
    with tempfile.TemporaryDirectory() as scratch:
        packed = Path(scratch) / "tree.tar.gz"
        pack_folder(folder, packed)
        with packed.open("rb") as file:
            return upload(agent, iter(lambda: file.read(archives.CHUNK), b""), principal)


def pack_folder(folder: Path, into: Path) -> None:
    """``folder``'s ``agent/`` and ``evals/`` as a tar.gz at ``into`` (caches left out)."""
    import tarfile

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name.split("/") else info

    with tarfile.open(into, "w:gz") as tar:
        for name in sorted(archives.ROOT_ENTRIES):
            if (folder / name).is_dir():
                tar.add(folder / name, arcname=name, filter=keep)


def activate(agent: Agent, revision_id: str) -> Revision:
    """Make ``revision_id`` the agent's active revision (rolling back is activating an
    older one). Sessions already started keep the revision they started on.

    Raises:
        DeploymentNotFound: the agent has no such revision.
        DeploymentInvalid: the revision has errors.
    """
    revision = Revision.objects.filter(agent=agent, pk=revision_id).first()
    if revision is None:
        raise DeploymentNotFound(f"Agent {agent.slug!r} has no deployment {revision_id[:60]!r}.")
    if revision.status != RevisionStatus.READY:
        raise DeploymentInvalid(
            f"Deployment {revision.pk} has errors and cannot be activated.",
            extra={"diagnostics": revision.diagnostics},
        )
    revision_folder(revision)  # unpacked here before anyone is sent to it
    Agent.objects.filter(pk=agent.pk).update(active_revision=revision)
    agent.active_revision = revision
    logger.info(
        "agent %r: revision %s activated",
        agent.slug,
        revision.pk,
        extra={"agent_slug": agent.slug, "tenant_id": agent.tenant_id},
    )
    return revision


def deploy_from_folder(tenant: Tenant, slug: str, folder: Path, *, activate_it: bool = False) -> tuple[Revision, bool]:
    """``agent deploy DIR --tenant T``: make the agent if it is new, upload the folder, and
    with ``activate_it`` activate a valid revision."""
    agent = Agent.objects.filter(slug=slug, tenant=tenant, source=AgentSource.DEPLOYMENT).first()
    if agent is None:
        agent = create_agent(tenant, slug)
    revision, created = upload_folder(agent, folder, None)
    if activate_it and revision.status == RevisionStatus.READY:
        activate(agent, revision.pk)
    return revision, created


__all__ = [
    "ArchiveRefused",
    "DeploymentInvalid",
    "DeploymentNotFound",
    "InvalidSlug",
    "NotTenantStaff",
    "SlugTaken",
    "activate",
    "create_agent",
    "revision_folder",
    "upload",
    "validate_revision",
]
