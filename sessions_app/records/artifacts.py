"""Artifacts that agents write (DESIGN.md §9.5): ``ctx.artifacts.tag`` on tools, hooks,
channel handlers and ``commit``, and the ``tag_artifact`` model tool, all land in ``tag``.

One artifact per ``(session, kind, name)``: tagging it again updates it in place
(``updatedAt`` moves, ``createdAt`` stays). The row and its ``artifact.tagged`` event are
written in one transaction. Content up to ``PLATFORM["ARTIFACT_INLINE_BYTES"]`` is kept in
the row; larger content goes to the files store (a ``StoredFile`` of scope ``artifact``,
removed with the artifact), so listing stays cheap. An artifact expires at its last update
plus its kind's retention (``artifacts.py``); ``delete_expired`` (a beat task) removes it.
Everything an agent passes here is the tenant's and untrusted: checked, bounded, and
refused with a ``ValueError`` the author (or the model) sees.
"""

from __future__ import annotations

import json
import mimetypes
import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from channels.db import database_sync_to_async as in_thread
from django.db import transaction
from django.utils import timezone

from agent_platform.conf import platform_settings
from agents import events
from agents.events import EventType
from agents.registry import surface_for_session
from sessions_app import quotas
from sessions_app.eventlog import append_event
from sessions_app.models import Artifact, FileScope, Session, StoredFile

MAX_NAME_CHARS = 255
MAX_METADATA_BYTES = 16_384
# type/subtype, RFC 6838 characters, nothing after it.
MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")
DELETE_BATCH = 500


def _checked_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError("an artifact needs a non-empty name")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"the artifact name is {len(name)} characters; at most {MAX_NAME_CHARS}")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise ValueError(f"the artifact name {name[:60]!r} has control characters")
    return name


def _checked_kind(session: Session, kind: Any) -> tuple[str, timedelta | None]:
    """The kind, and how long its artifacts are kept (None: for ever)."""
    config = surface_for_session(session).artifacts
    kinds = sorted(config.kinds) if config is not None else []
    if not isinstance(kind, str) or config is None or kind not in config.kinds:
        known = ", ".join(kinds) if kinds else "none (the agent has no artifacts.py)"
        raise ValueError(f"unknown artifact kind {str(kind)[:60]!r}; the kinds are: {known}")
    return kind, config.retention_of(kind)


def _checked_content_type(content_type: Any, name: str, content: bytes | str | None) -> str:
    if content_type is None:
        guessed = mimetypes.guess_type(name, strict=False)[0]
        return guessed or ("text/plain" if isinstance(content, str) else "application/octet-stream")
    if not isinstance(content_type, str) or not MEDIA_TYPE.fullmatch(content_type):
        raise ValueError(f"content_type {str(content_type)[:60]!r} is not a type/subtype such as 'text/markdown'")
    return content_type


def _checked_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a JSON object (a dict), not {type(metadata).__name__}")
    try:
        size = len(json.dumps(metadata))
    except (TypeError, ValueError) as problem:
        raise ValueError(f"metadata is not JSON: {problem}") from problem
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes of JSON; at most {MAX_METADATA_BYTES}")
    return metadata


def _checked_content(content: Any) -> bytes | None:
    if content is None:
        return None
    if isinstance(content, str):
        data = content.encode()
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise ValueError(f"content must be bytes, str or None, not {type(content).__name__}")
    limit = platform_settings.ARTIFACT_MAX_BYTES
    if len(data) > limit:
        raise ValueError(f"the content is {len(data)} bytes; an artifact holds at most {limit}")
    return data


def tag(
    session: Session,
    turn_id: str | None,
    name: str,
    content: bytes | str | None = None,
    *,
    kind: str,
    content_type: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Artifact:
    """Create or update the artifact ``(session, kind, name)`` and record ``artifact.tagged``.

    Raises:
        ValueError: an unknown kind, a bad name, content type or metadata, or content
            over ``PLATFORM["ARTIFACT_MAX_BYTES"]``; nothing is written then.
    """
    name = _checked_name(name)
    kind, retention = _checked_kind(session, kind)
    media_type = _checked_content_type(content_type, name, content)
    data = _checked_content(content)
    meta = _checked_metadata(metadata)
    now = timezone.now()
    inline = data is None or len(data) <= platform_settings.ARTIFACT_INLINE_BYTES
    size = len(data) if data is not None else 0
    fields: dict[str, Any] = {
        "turn_id": turn_id,
        "content_type": media_type,
        "size": size,
        "has_content": data is not None,
        "content": data if inline and data is not None else b"",
        "metadata": meta,
        "updated_at": now,
        "expires_at": now + retention if retention is not None else None,
    }
    with transaction.atomic():
        quotas.admit_bytes(session.tenant_id, size)  # the tenant's stored bytes (413 past them)
        artifact, created = Artifact.objects.select_for_update().get_or_create(
            session=session, kind=kind, name=name, defaults={**fields, "created_at": now}
        )
        if not created:
            for field, value in fields.items():
                setattr(artifact, field, value)
            artifact.save(update_fields=list(fields))
        _store_content(artifact, session, None if inline else data)
        data_of_event = events.artifact_tagged(artifact.pk, kind, name, media_type, size)
        append_event(session.pk, EventType.ARTIFACT_TAGGED, data_of_event, turn_id)
    return artifact


def _store_content(artifact: Artifact, session: Session, data: bytes | None) -> None:
    """Keep content too large for the row in the files store (or drop what an earlier,
    larger version left there)."""
    if data is None:
        StoredFile.objects.filter(artifact=artifact).delete()
        return
    StoredFile.objects.update_or_create(
        artifact=artifact,
        defaults={
            "tenant_id": session.tenant_id,
            "agent_id": session.agent_id,
            "session": None,
            "scope": FileScope.ARTIFACT,
            "path": f"/{artifact.pk}",
            "content": data,
            "content_type": artifact.content_type,
            "size": len(data),
            "etag": secrets.token_hex(16),
        },
    )


def content_of(artifact: Artifact) -> bytes | None:
    """The artifact's bytes, wherever they are kept; None for a tag without content."""
    if not artifact.has_content:
        return None
    stored = StoredFile.objects.filter(artifact=artifact).values_list("content", flat=True).first()
    if stored is not None:
        return bytes(stored)
    inline = Artifact.objects.filter(pk=artifact.pk).values_list("content", flat=True).first()
    return bytes(inline) if inline is not None else None


def delete_expired(now: datetime | None = None) -> int:
    """Remove every artifact whose retention ran out (with its stored content), in
    batches so one pass never holds a long lock; returns how many went."""
    now = now or timezone.now()
    removed = 0
    while True:
        batch = list(Artifact.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:DELETE_BATCH])
        if not batch:
            return removed
        Artifact.objects.filter(pk__in=batch).delete()  # the files-store content cascades
        removed += len(batch)


@dataclass(frozen=True)
class SessionArtifacts:
    """``ctx.artifacts`` for code running in a session (and, in a turn, that turn)."""

    session: Session
    turn_id: str | None = None

    def for_turn(self, turn_id: str | None) -> SessionArtifacts:
        return SessionArtifacts(self.session, turn_id)

    async def tag(
        self,
        name: str,
        content: bytes | str | None = None,
        *,
        kind: str,
        content_type: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """See ``agents.sdk._context.Artifacts``; returns the ``art_...`` id."""
        artifact = await in_thread(tag)(
            self.session, self.turn_id, name, content, kind=kind, content_type=content_type, metadata=metadata
        )
        return artifact.pk
