from __future__ import annotations

from typing import Any

from rest_framework import serializers

from sessions_app.models import Event, Session


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


class EventSerializer(serializers.BaseSerializer[Event]):
    """``{type, index, sessionId, turnId?, at, data}`` (DESIGN.md §5)."""

    def to_representation(self, instance: Event) -> dict[str, Any]:
        return instance.as_record()
