"""``GET /api/v1/usage``: turns, tokens and cost per agent and day."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.generics import ListAPIView

from agent_platform.api.pagination import cursor_pages
from agent_platform.api.permissions import require_superuser
from agent_platform.api.serializers import UsageRowSerializer
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import Tenant
from agent_platform.usage_report import UsageFilter, usage_rows
from agents.models import SLUG_MAX_LENGTH
from sessions_app.models import Turn

TENANT_SLUG_MAX_LENGTH = Tenant._meta.get_field("slug").max_length or 63


def _text_param(value: str | None, name: str, max_length: int) -> str | None:
    if value is None:
        return None
    if not value or len(value) > max_length or "\x00" in value:
        raise ApiError(400, "invalid", f"{name} must be 1 to {max_length} characters without NUL.")
    return value


def _date_param(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        if len(value) == len("YYYY-MM-DD"):  # fromisoformat also takes 20250301
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise ApiError(400, "invalid", f"{name} must be a day as YYYY-MM-DD, not {value[:40]!r}.")


@extend_schema(
    parameters=[
        OpenApiParameter(
            "agent",
            {"type": "string", "minLength": 1, "maxLength": SLUG_MAX_LENGTH},
            description="Only this agent's turns (its slug).",
        ),
        OpenApiParameter("from", OpenApiTypes.DATE, description="The first day (UTC, inclusive)."),
        OpenApiParameter("to", OpenApiTypes.DATE, description="The last day (UTC, inclusive)."),
        OpenApiParameter(
            "tenant",
            {"type": "string", "minLength": 1, "maxLength": TENANT_SLUG_MAX_LENGTH},
            description="Whose usage (default: the caller's tenant); another tenant's needs a superuser.",
        ),
    ],
    responses={
        200: UsageRowSerializer(many=True),
        403: OpenApiResponse(description="`tenant` names another tenant and the caller is not a superuser."),
        404: OpenApiResponse(description="A superuser named a tenant that does not exist."),
    },
)
class UsageView(ListAPIView[Any]):
    """Newest day first, then by agent; a day with no turns of an agent has no row."""

    serializer_class = UsageRowSerializer
    pagination_class = cursor_pages("usage", ("-day", "agent"), "date")

    def get_queryset(self) -> QuerySet[Turn, dict[str, Any]]:
        user = caller(self.request)
        query = self.request.query_params
        agent = _text_param(query.get("agent"), "agent", SLUG_MAX_LENGTH)
        first_day, last_day = _date_param(query.get("from"), "from"), _date_param(query.get("to"), "to")
        slug = _text_param(query.get("tenant"), "tenant", TENANT_SLUG_MAX_LENGTH)
        tenant = user.tenant
        if slug is not None and slug != tenant.slug:
            require_superuser(user, "read another tenant's usage")
            found = Tenant.objects.filter(slug=slug).first()
            if found is None:
                raise ApiError(404, "tenant_not_found", f"No tenant {slug!r}.")
            tenant = found
        wanted = UsageFilter(tenant=tenant, agent=agent, first_day=first_day, last_day=last_day)
        return usage_rows(wanted)
