from __future__ import annotations

from rest_framework import serializers

from agent_platform.api.fields import StrictCharField
from agent_platform.models import ApiToken
from agents.models import Agent


class ApiTokenSerializer(serializers.ModelSerializer[ApiToken]):
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    lastUsedAt = serializers.DateTimeField(source="last_used_at", read_only=True, allow_null=True)
    revokedAt = serializers.DateTimeField(source="revoked_at", read_only=True, allow_null=True)

    class Meta:
        model = ApiToken
        fields = ["prefix", "name", "createdAt", "lastUsedAt", "revokedAt"]
        read_only_fields = ["prefix"]


class IssuedTokenSerializer(ApiTokenSerializer):
    """A new token: the secret itself appears in this one response only."""

    token = serializers.CharField(read_only=True)

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]


class TokenRequestSerializer(serializers.Serializer[None]):
    name = StrictCharField(max_length=100, required=False, allow_blank=True, default="")


class AgentSerializer(serializers.ModelSerializer[Agent]):
    shared = serializers.BooleanField(source="is_shared")

    class Meta:
        model = Agent
        fields = ["slug", "source", "shared"]
