"""``PATCH /api/v1/tenants/<slug>``: set a tenant's quotas and monthly budget (superusers only)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.tenant_serializers import TenantQuotasSerializer
from agent_platform.auth import caller
from agent_platform.errors import ApiError
from agent_platform.models import Tenant


class TenantQuotasView(APIView):
    """``PATCH`` a tenant's ``maxRunningTurns``, ``maxSessionsPerMinute``, ``maxOpenStreams``,
    ``maxStoredBytes`` and ``monthlyBudgetUsd`` (null: the platform's default). Only a
    principal linked to a superuser may: anyone else gets 403, whichever tenant it names."""

    @extend_schema(
        operation_id="tenant_quotas_update",
        request=TenantQuotasSerializer,
        responses={
            200: TenantQuotasSerializer,
            403: OpenApiResponse(description="the caller is not a superuser"),
            404: OpenApiResponse(description="no such tenant"),
        },
    )
    def patch(self, request: Request, tenant_slug: str) -> Response:
        user = caller(request).principal.user
        if user is None or not (user.is_active and user.is_superuser):
            raise ApiError(403, "forbidden", "Only a superuser may change a tenant's quotas and budget.")
        tenant = Tenant.objects.filter(slug=tenant_slug).first()
        if tenant is None:
            raise ApiError(404, "tenant_not_found", f"No tenant {tenant_slug!r}.")
        body = TenantQuotasSerializer(tenant, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data)
