from __future__ import annotations

from rest_framework import serializers

from sessions_app.models import Session


class SessionSerializer(serializers.ModelSerializer[Session]):
    """Session state as the API shows it to its owner."""

    sessionId = serializers.CharField(source="id")
    agent = serializers.CharField(source="agent.slug")
    dryRun = serializers.BooleanField(source="dry_run")
    continuationToken = serializers.CharField(source="continuation_token", allow_null=True)
    eventCount = serializers.IntegerField(source="next_event_index")
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
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields


class StrictCharField(serializers.CharField):
    """A string and nothing else: DRF's CharField would turn 42 or true into text."""

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only, not "yes" or 1."""

    def to_internal_value(self, data: object) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


MAX_MESSAGE_CHARS = 200_000


def workspace_files_field() -> serializers.DictField:
    return serializers.DictField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text="Files written into the session workspace before the turn: {relative path: text}.",
    )


class CreateSessionBody(serializers.Serializer[None]):
    message = StrictCharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=False)
    continuationToken = StrictCharField(required=False, max_length=200)
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


class TurnAccepted(serializers.Serializer[None]):
    sessionId = serializers.CharField()
    continuationToken = serializers.CharField()
    turnId = serializers.CharField()
