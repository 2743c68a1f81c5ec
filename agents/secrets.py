"""Secrets by name (docs/secrets.md): stored per agent, encrypted at rest, resolved when used.

``resolve(name, agent=...)`` is the one lookup. Everything that names a secret goes
through it on each use, so a secret set after start works on the next call: a pack's
options (``slack_channel(signing_secret="SLACK_SIGNING_SECRET")``), an outbound
webhook's ``secret``, an MCP connection's ``${NAME}``, and ``ctx.secrets`` (only the names
the agent declared in ``define_agent(secrets=[...])``: ``declared_secrets``). The order:

1. the agent's stored secret (``PUT /api/v1/agents/<slug>/secrets/<NAME>``);
2. for a shared ``AGENTS_DIR`` agent only, the environment variable ``NAME``;
3. then the contents of the file named by ``NAME_FILE`` (Docker secrets).

A deployed agent never reads the platform's environment. Values are Fernet ciphertext in
the database, under the keys of ``PLATFORM_SECRETS_KEY`` (``MultiFernet``: the first
encrypts, every one decrypts; ``rotate()`` re-encrypts under the first), then a key
derived from ``SECRET_KEY``, which encrypts when no key is set. Importing this module
does nothing: keys are read on first use. Never log, return or raise a value.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

from channels.db import database_sync_to_async as in_thread
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agent_platform.models import Tenant
from agents.models import Agent, AgentSecret
from agents.sdk._definitions import secret_name_problem

logger = logging.getLogger(__name__)

# Enough for a PEM private key or a service account's JSON; a secret is not a file store.
MAX_VALUE_CHARS = 65_536


class InvalidSecret(DomainError):
    """A secret name that is not env-var-like, or a value that cannot be stored (400)."""

    status, code = 400, "invalid_secret"


class SecretNotFound(DomainError):
    status, code = 404, "secret_not_found"


# --- encryption ---------------------------------------------------------------------------------


def derived_key(secret_key: str) -> bytes:
    """The Fernet key derived from ``SECRET_KEY`` (so ``make run`` needs no setting)."""
    digest = hashlib.sha256(b"agent-platform secrets v1\0" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest)


@functools.lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    return MultiFernet([*(Fernet(key) for key in keys), Fernet(derived_key(secret_key))])


def cipher() -> MultiFernet:
    """The configured keys, the first encrypting (``PLATFORM["SECRETS_KEYS"]``, then the derived one)."""
    return _cipher(tuple(platform_settings.SECRETS_KEYS), str(settings.SECRET_KEY))


def encrypt(value: str) -> str:
    return cipher().encrypt(value.encode()).decode("ascii")


def _decrypt(row_name: str, agent_slug: str, ciphertext: str) -> str | None:
    try:
        return cipher().decrypt(ciphertext.encode("ascii")).decode()
    except InvalidToken:
        logger.error(
            "the stored secret %s of agent %r cannot be decrypted with any configured key "
            "(PLATFORM_SECRETS_KEY lost a key it was encrypted with?); treated as not set",
            row_name,
            agent_slug,
        )
        return None


# --- resolution ----------------------------------------------------------------------------------


def _from_environment(name: str) -> str | None:
    value = os.environ.get(name)
    if value:
        return value
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip() or None
        except (OSError, UnicodeDecodeError):
            return None
    return None


def resolve_many(names: Iterable[str], *, agent: Agent) -> dict[str, str]:
    """``{name: value}`` of the names that resolve (see the module docstring), in one query."""
    wanted = [name for name in dict.fromkeys(names) if secret_name_problem(name) is None]
    if not wanted:
        return {}
    found: dict[str, str] = {}
    if agent.pk is not None:  # an in-process run of a folder has no row, so nothing stored
        rows = AgentSecret.objects.filter(agent_id=agent.pk, name__in=wanted).values_list("name", "ciphertext")
        for name, ciphertext in rows:
            value = _decrypt(name, agent.slug, ciphertext)
            if value is not None:
                found[name] = value
    if agent.is_shared:
        for name in wanted:
            if name not in found and (value := _from_environment(name)) is not None:
                found[name] = value
    return found


def resolve(name: str, *, agent: Agent) -> str | None:
    """The value of the secret ``name`` for ``agent`` now, or None when it is not set.

    Example::

        token = resolve("SLACK_BOT_TOKEN", agent=agent)
    """
    return resolve_many([name], agent=agent).get(name)


async def aresolve(name: str, *, agent: Agent) -> str | None:
    """``resolve`` from async code (its query on a database thread)."""
    return await in_thread(resolve)(name, agent=agent)


def declared_secrets(agent: Agent, names: Iterable[str]) -> Mapping[str, str]:
    """``ctx.secrets``: the ``names`` the agent declared that resolve now, read-only."""
    names = tuple(names)
    return MappingProxyType(resolve_many(names, agent=agent) if names else {})


async def adeclared_secrets(agent: Agent, names: Iterable[str]) -> Mapping[str, str]:
    names = tuple(names)
    if not names:
        return MappingProxyType({})
    return await in_thread(declared_secrets)(agent, names)


# --- the store -----------------------------------------------------------------------------------


def owner_tenant(agent: Agent) -> Tenant:
    """The tenant whose staff manage the agent's secrets: its own, or for a shared agent
    ``PLATFORM["SHARED_AGENTS_TENANT"]`` (a shared agent serves every tenant, so only the
    operator's tenant may bind what it runs with)."""
    if agent.tenant_id is not None:
        return agent.tenant  # type: ignore[return-value]
    slug = platform_settings.SHARED_AGENTS_TENANT
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug})
    return tenant


def checked_name(name: str) -> str:
    """Raises:
    InvalidSecret: ``name`` is not env-var-like (the message never quotes more than 60 characters)."""
    problem = secret_name_problem(name)
    if problem is not None:
        raise InvalidSecret(problem)
    return name


def checked_value(value: str) -> str:
    """Raises:
    InvalidSecret: empty, too long, or holding NUL (the message never quotes the value)."""
    if not value:
        raise InvalidSecret("a secret's value must be a non-empty string")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidSecret(f"a secret's value may hold at most {MAX_VALUE_CHARS} characters")
    if "\x00" in value:
        raise InvalidSecret("a secret's value may not contain NUL")
    return value


def set_secret(agent: Agent, name: str, value: str) -> tuple[AgentSecret, bool]:
    """Store (or replace) the agent's secret ``name``; returns the row and whether it is new.

    Raises:
        InvalidSecret: the name or the value (see ``checked_name``, ``checked_value``).
    """
    checked_name(name)
    ciphertext = encrypt(checked_value(value))
    now = timezone.now()
    try:
        with transaction.atomic():
            row, created = AgentSecret.objects.select_for_update().get_or_create(
                agent=agent,
                name=name,
                defaults={
                    "tenant": owner_tenant(agent),
                    "ciphertext": ciphertext,
                    "created_at": now,
                    "updated_at": now,
                },
            )
            if not created:
                row.ciphertext, row.updated_at = ciphertext, now
                row.save(update_fields=["ciphertext", "updated_at"])
    except IntegrityError:  # set at the same moment by another request: this write wins
        AgentSecret.objects.filter(agent=agent, name=name).update(ciphertext=ciphertext, updated_at=now)
        row, created = AgentSecret.objects.get(agent=agent, name=name), False
    _log_change(agent, row.tenant_id, name, "set" if created else "replaced")
    return row, created


def delete_secret(agent: Agent, name: str) -> None:
    """Raises:
    SecretNotFound: the agent has no secret ``name``."""
    deleted, _ = AgentSecret.objects.filter(agent=agent, name=name).delete()
    if not deleted:
        raise SecretNotFound(f"agent {agent.slug!r} has no secret {name[:60]!r}")
    _log_change(agent, owner_tenant(agent).pk, name, "deleted")


def _log_change(agent: Agent, tenant_id: int, name: str, what: str) -> None:
    # On the agent's /v1/logs for the owning tenant only (a shared agent's untenanted lines
    # are everyone's); the name, never the value.
    logger.info(
        "secret %s of agent %r %s", name, agent.slug, what, extra={"agent_slug": agent.slug, "tenant_id": tenant_id}
    )


def rotate() -> tuple[int, int]:
    """Re-encrypt every stored secret under the first configured key; returns (rotated,
    unreadable): rows no configured key decrypts are left as they are (and logged)."""
    rotated = unreadable = 0
    current = cipher()
    for pk in AgentSecret.objects.order_by("pk").values_list("pk", flat=True).iterator():
        with transaction.atomic():
            row = AgentSecret.objects.select_for_update().select_related("agent").filter(pk=pk).first()
            if row is None:
                continue
            try:
                row.ciphertext = current.rotate(row.ciphertext.encode("ascii")).decode("ascii")
            except InvalidToken:
                unreadable += 1
                logger.error(
                    "the stored secret %s of agent %r cannot be decrypted: not rotated", row.name, row.agent.slug
                )
                continue
            row.save(update_fields=["ciphertext"])
            rotated += 1
    return rotated, unreadable
