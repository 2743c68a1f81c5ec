from __future__ import annotations

from rest_framework import serializers

from agent_platform.api.fields import StrictCharField
from agent_platform.models import ApiToken
from agents.models import Agent, Revision


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
    activeDeployment = serializers.CharField(source="active_revision_id", allow_null=True, read_only=True)

    class Meta:
        model = Agent
        fields = ["slug", "source", "shared", "activeDeployment"]


class AgentRequestSerializer(serializers.Serializer[None]):
    slug = StrictCharField(max_length=300)


class DeploymentSerializer(serializers.ModelSerializer[Revision]):
    """A revision of a deployed agent, as the deployments routes answer it."""

    active = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    uploadedBy = serializers.SerializerMethodField()

    class Meta:
        model = Revision
        fields = ["id", "hash", "status", "diagnostics", "active", "files", "size", "createdAt", "uploadedBy"]

    def get_active(self, revision: Revision) -> bool:
        return bool(revision.agent.active_revision_id == revision.pk)

    def get_uploadedBy(self, revision: Revision) -> str | None:
        principal = revision.uploaded_by
        return None if principal is None else principal.name
