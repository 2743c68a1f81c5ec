from __future__ import annotations

from rest_framework import serializers

from agent_platform.api.fields import StrictCharField, StrictIntegerField
from agent_platform.models import ApiToken, Principal, Tenant, TokenScope
from agents.models import Agent, AgentSource, Revision


class ApiTokenSerializer(serializers.ModelSerializer[ApiToken]):
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    lastUsedAt = serializers.DateTimeField(source="last_used_at", read_only=True, allow_null=True)
    revokedAt = serializers.DateTimeField(source="revoked_at", read_only=True, allow_null=True)
    expiresAt = serializers.DateTimeField(source="expires_at", read_only=True, allow_null=True)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=TokenScope.choices), read_only=True)
    active = serializers.BooleanField(source="is_active", read_only=True, help_text="Neither revoked nor expired.")

    class Meta:
        model = ApiToken
        fields = ["prefix", "name", "scopes", "createdAt", "expiresAt", "lastUsedAt", "revokedAt", "active"]
        read_only_fields = ["prefix"]


class IssuedTokenSerializer(ApiTokenSerializer):
    """A new token: the secret itself appears in this one response only."""

    token = serializers.CharField(read_only=True)

    class Meta(ApiTokenSerializer.Meta):
        fields = ["token", *ApiTokenSerializer.Meta.fields]


# Ten years: long enough for any real expiry, short enough for a datetime.
MAX_EXPIRY_SECONDS = 10 * 366 * 24 * 3600


class TokenRequestSerializer(serializers.Serializer[None]):
    name = StrictCharField(max_length=100, required=False, allow_blank=True, default="")
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=TokenScope.choices),
        required=False,
        allow_empty=False,
        min_length=1,
        max_length=len(TokenScope.choices) * 2,
        help_text="What the token may do; default: every scope. A token cannot grant a scope it lacks.",
    )
    expiresInSeconds = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_EXPIRY_SECONDS,
        help_text="Seconds until the token is refused (401); default: it never expires.",
    )

    def validate_scopes(self, value: list[str]) -> list[str]:
        return [scope for scope in TokenScope.values if scope in value]  # each once, in a stable order


class AgentSerializer(serializers.ModelSerializer[Agent]):
    shared = serializers.BooleanField(source="is_shared")
    activeDeployment = serializers.CharField(source="active_revision_id", allow_null=True, read_only=True)

    class Meta:
        model = Agent
        fields = ["slug", "source", "shared", "activeDeployment"]


class DiagnosticSerializer(serializers.Serializer[None]):
    """One finding of discovery (``agent validate`` prints the same)."""

    severity = serializers.ChoiceField(choices=["error", "warning"])
    code = serializers.CharField(help_text="A stable id, e.g. agents.E007.")
    path = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    hint = serializers.CharField()


class MissingModelKeySerializer(serializers.Serializer[None]):
    model = serializers.CharField()
    variable = serializers.CharField(help_text="The unset provider key every turn on this model needs.")


class AgentDetailSerializer(serializers.Serializer[None]):
    """What ``/<slug>/v1/health`` and ``agent validate`` know of one agent."""

    slug = serializers.CharField()
    source = serializers.ChoiceField(choices=AgentSource.choices)  # type: ignore[assignment]  # a field, not Field.source
    shared = serializers.BooleanField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    ok = serializers.BooleanField(help_text="Served: its tree has no errors (health answers 200).")
    model = serializers.CharField(allow_null=True, help_text="Null while no deployment is active.")
    description = serializers.CharField(allow_blank=True)
    tools = serializers.ListField(child=serializers.CharField())
    errors = serializers.IntegerField()  # type: ignore[assignment]  # a field, not Serializer.errors
    warnings = serializers.IntegerField()
    diagnostics = DiagnosticSerializer(many=True)
    missingModelKeys = MissingModelKeySerializer(many=True)
    health = serializers.URLField(help_text="The agent's health route.")


class UsageRowSerializer(serializers.Serializer[None]):
    """One agent's usage on one day (UTC)."""

    day = serializers.DateField()
    agent = serializers.CharField()
    turns = serializers.IntegerField()
    failedTurns = serializers.IntegerField(source="failed_turns")
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    cacheReadTokens = serializers.IntegerField()
    cacheWriteTokens = serializers.IntegerField()
    reasoningTokens = serializers.IntegerField()
    costUsd = serializers.DecimalField(source="total_cost", max_digits=20, decimal_places=6, coerce_to_string=False)


class TenantSerializer(serializers.ModelSerializer[Tenant]):
    createdAt = serializers.DateTimeField(source="created_at")
    retentionDays = serializers.IntegerField(source="retention_days", allow_null=True)
    principals = serializers.IntegerField(source="principal_count", help_text="How many principals it has.")
    agents = serializers.IntegerField(source="agent_count", help_text="How many agents it deployed.")

    class Meta:
        model = Tenant
        fields = ["slug", "name", "createdAt", "retentionDays", "principals", "agents"]


class PrincipalSerializer(serializers.ModelSerializer[Principal]):
    createdAt = serializers.DateTimeField(source="created_at")
    username = serializers.CharField(
        source="user.username", allow_null=True, default=None, help_text="Its admin account."
    )
    staff = serializers.BooleanField(source="user.is_staff", default=False)
    superuser = serializers.BooleanField(source="user.is_superuser", default=False)
    activeTokens = serializers.IntegerField(source="active_tokens")

    class Meta:
        model = Principal
        fields = ["name", "createdAt", "username", "staff", "superuser", "activeTokens"]


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
