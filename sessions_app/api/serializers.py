from __future__ import annotations

import re
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Left
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agent_platform.api.fields import StrictBooleanField, StrictCharField
from agents.events import EventType
from agents.runtime.workspace import RESERVED_NAMES, WorkspacePathError, normalize_workspace_path
from sessions_app.channel_state import MAX_TOKEN_CHARS, listed_token
from sessions_app.models import Event, Session

# A session's first message, as lists show it: its beginning only.
FIRST_MESSAGE_CHARS = 200


def _first_messages(session: Any) -> QuerySet[Event, str]:
    """The texts of the session's ``message.received`` events in order, each cut to its
    first ``FIRST_MESSAGE_CHARS`` characters; the first is found by one index probe."""
    received = Event.objects.filter(session=session, type=EventType.MESSAGE_RECEIVED).order_by("index")
    text = Left(KeyTextTransform("text", "data"), FIRST_MESSAGE_CHARS)
    return received.annotate(first=text).values_list("first", flat=True)


def with_first_message(sessions: QuerySet[Session]) -> QuerySet[Session]:
    """``sessions`` with ``first_message`` set on each row (what ``firstMessage`` shows)."""
    return sessions.annotate(first_message=Subquery(_first_messages(OuterRef("pk"))[:1]))


class SessionSerializer(serializers.ModelSerializer[Session]):
    """Session state as the API shows it to its owner."""

    sessionId = serializers.CharField(source="id")
    agent = serializers.CharField(source="agent.slug")
    dryRun = serializers.BooleanField(source="dry_run")
    continuationToken = serializers.SerializerMethodField(
        help_text="ct_... (the HTTP API), or channel:key for a keyed channel session (null in task mode)."
    )
    eventCount = serializers.IntegerField(source="next_event_index")
    forkedFrom = serializers.SerializerMethodField(help_text="The session and index this one was forked from, or null.")
    firstMessage = serializers.SerializerMethodField(
        help_text=f"The first message's text (its first {FIRST_MESSAGE_CHARS} characters), or null before one."
    )
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Session
        fields = [
            "sessionId",
            "agent",
            "channel",
            "mode",
            "purpose",
            "status",
            "title",
            "dryRun",
            "continuationToken",
            "eventCount",
            "forkedFrom",
            "firstMessage",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "string", "nullable": True})
    def get_continuationToken(self, session: Session) -> str | None:
        return listed_token(session)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_firstMessage(self, session: Session) -> str | None:
        if hasattr(session, "first_message"):
            return session.first_message  # annotated by with_first_message (the lists)
        return _first_messages(session).first()

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {"sessionId": {"type": "string"}, "index": {"type": "integer"}},
        }
    )
    def get_forkedFrom(self, session: Session) -> dict[str, object] | None:
        if not session.forked_from:
            return None
        return {"sessionId": session.forked_from, "index": session.forked_at_index}


MAX_MESSAGE_CHARS = 200_000


MAX_WORKSPACE_FILES = 100
MAX_WORKSPACE_PATH_CHARS = 512
# 63 characters of at most 4 UTF-8 bytes stay under the 255-byte file name limit.
MAX_SEGMENT_CHARS = 63
_SEGMENT_CHAR = r"[^/\\\x00]"
_SEGMENT = (
    rf"(?:[^./\\\x00]{_SEGMENT_CHAR}{{0,{MAX_SEGMENT_CHARS - 1}}}"
    rf"|\.[^./\\\x00]{_SEGMENT_CHAR}{{0,{MAX_SEGMENT_CHARS - 2}}}"
    rf"|\.\.{_SEGMENT_CHAR}{{1,{MAX_SEGMENT_CHARS - 2}}})"
)
# A canonical relative path: no empty, "." or ".." segment, no backslash, not under a
# name the platform writes itself (AGENTS.md, .skills/, memory/; any case).
WORKSPACE_PATH_SCHEMA = {
    "type": "string",
    "maxLength": MAX_WORKSPACE_PATH_CHARS,
    "pattern": rf"^{_SEGMENT}(?:/{_SEGMENT})*$",
    "not": {"pattern": f"^(?:{'|'.join(re.escape(name) for name in RESERVED_NAMES)})(?:/|$)"},
}


def check_workspace_path(path: str) -> str:
    """``path`` if it is a canonical relative workspace path (``WORKSPACE_PATH_SCHEMA``).

    Raises:
        ValidationError: for anything else, including paths the workspace would
            normalise to something else (``./a``, ``a//b``, ``a\\b``).
    """
    try:
        canonical = normalize_workspace_path(path)
    except WorkspacePathError as error:
        raise serializers.ValidationError(str(error)) from None
    if canonical != path:
        raise serializers.ValidationError(f"workspace path {path!r} is not canonical; send {canonical!r}")
    if len(path) > MAX_WORKSPACE_PATH_CHARS or any(len(part) > MAX_SEGMENT_CHARS for part in path.split("/")):
        raise serializers.ValidationError(
            f"workspace path {path[:80]!r} is too long: at most {MAX_WORKSPACE_PATH_CHARS} characters, "
            f"{MAX_SEGMENT_CHARS} per name"
        )
    return path


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": MAX_WORKSPACE_FILES,
        "propertyNames": WORKSPACE_PATH_SCHEMA,
        "additionalProperties": {"type": "string"},
        "description": "Files written into the session workspace before the turn: {relative path: text}.",
    }
)
class WorkspaceFilesField(serializers.DictField):
    """``{relative path: text}``; paths must be canonical and stay inside the workspace."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=StrictCharField(allow_blank=True, trim_whitespace=False), required=False, **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        files: dict[str, str] = super().to_internal_value(data)
        if len(files) > MAX_WORKSPACE_FILES:
            raise serializers.ValidationError(f"at most {MAX_WORKSPACE_FILES} files per message, not {len(files)}")
        for path in files:
            check_workspace_path(path)
        return files


def workspace_files_field() -> WorkspaceFilesField:
    return WorkspaceFilesField()


class CreateSessionBody(serializers.Serializer[None]):
    message = StrictCharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=False)
    continuationToken = StrictCharField(required=False, max_length=MAX_TOKEN_CHARS, trim_whitespace=False)
    mode = serializers.ChoiceField(choices=["chat", "task"], required=False, default="chat")
    purpose = serializers.ChoiceField(choices=["live", "eval"], required=False, default="live")
    title = StrictCharField(required=False, allow_blank=True, max_length=200, default="")
    workspaceFiles = workspace_files_field()
    dryRun = StrictBooleanField(required=False, default=False)


class FollowUpBody(serializers.Serializer[None]):
    message = StrictCharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=False)
    admission = serializers.ChoiceField(
        choices=["preempt", "coalesce", "enqueue", "reject"], required=False, default="preempt"
    )
    workspaceFiles = workspace_files_field()


class DecisionBody(serializers.Serializer[None]):
    decision = serializers.ChoiceField(choices=["approve", "deny"])
    reason = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")


class ForkBody(serializers.Serializer[None]):
    atIndex = serializers.IntegerField(
        required=False, min_value=0, help_text="The last event copied; default: the end of the last settled turn."
    )


class Forked(serializers.Serializer[None]):
    sessionId = serializers.CharField()
    continuationToken = serializers.CharField()


class TurnAccepted(serializers.Serializer[None]):
    sessionId = serializers.CharField()
    continuationToken = serializers.CharField()
    turnId = serializers.CharField()
