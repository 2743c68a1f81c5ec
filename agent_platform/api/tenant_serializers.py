"""The quotas and budget of a tenant, as ``PATCH /api/v1/tenants/<slug>`` takes and answers them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from rest_framework import serializers

from agent_platform.models import Tenant

INT_MAX = 2**31 - 1  # the columns' range (PositiveIntegerField)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer and nothing else: DRF's IntegerField would take "5" or 5.0."""

    def to_internal_value(self, data: object) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return int(super().to_internal_value(data))


class BudgetField(serializers.DecimalField):
    """USD with cents, given as a JSON number or a decimal string ("12.50")."""

    def to_internal_value(self, data: object) -> Decimal:
        if isinstance(data, bool) or not isinstance(data, int | float | str):
            self.fail("invalid")
        return super().to_internal_value(data)


class TenantQuotasSerializer(serializers.ModelSerializer[Tenant]):
    """Each field null means the platform's default; a field left out is unchanged."""

    slug = serializers.CharField(read_only=True)
    maxRunningTurns = StrictIntegerField(
        source="max_running_turns", min_value=1, max_value=INT_MAX, allow_null=True, required=False
    )
    maxSessionsPerMinute = StrictIntegerField(
        source="max_sessions_per_minute", min_value=1, max_value=INT_MAX, allow_null=True, required=False
    )
    maxOpenStreams = StrictIntegerField(
        source="max_open_streams", min_value=1, max_value=INT_MAX, allow_null=True, required=False
    )
    maxStoredBytes = StrictIntegerField(
        source="max_stored_bytes", min_value=0, max_value=2**63 - 1, allow_null=True, required=False
    )
    monthlyBudgetUsd = BudgetField(
        source="monthly_budget_usd",
        max_digits=12,
        decimal_places=2,
        min_value=Decimal(0),
        allow_null=True,
        required=False,
        coerce_to_string=True,
    )

    class Meta:
        model = Tenant
        fields = [
            "slug",
            "maxRunningTurns",
            "maxSessionsPerMinute",
            "maxOpenStreams",
            "maxStoredBytes",
            "monthlyBudgetUsd",
        ]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(self.initial_data) - set(self.fields) if isinstance(self.initial_data, dict) else set()
        if unknown:
            raise serializers.ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}.")
        return attrs
