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
