"""The operator's routes (superusers only): ``GET /api/v1/tenants``,
``GET /api/v1/tenants/:slug`` and ``GET /api/v1/tenants/:slug/principals``."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_platform.api.pagination import cursor_pages
from agent_platform.api.permissions import IsSuperuser
from agent_platform.api.serializers import PrincipalSerializer, TenantSerializer
from agent_platform.api.tenant_serializers import TenantQuotasSerializer
from agent_platform.errors import ApiError
from agent_platform.models import Principal, Tenant
from agent_platform.scopes import TokenScopePermission
from agents.models import AgentSource

SUPERUSER_ONLY = OpenApiResponse(description="The caller is not a superuser (whatever the route names).")
OPERATOR_PERMISSIONS = [IsAuthenticated, TokenScopePermission, IsSuperuser]


def tenants_with_counts() -> QuerySet[Tenant]:
    return Tenant.objects.annotate(
        principal_count=Count("principals", distinct=True),
        agent_count=Count("agents", filter=Q(agents__source=AgentSource.DEPLOYMENT), distinct=True),
    )


def tenant_or_404(slug: str) -> Tenant:
    tenant = tenants_with_counts().filter(slug=slug[:200]).first() if "\x00" not in slug else None
    if tenant is None:
        raise ApiError(404, "tenant_not_found", f"No tenant {slug[:63]!r}.")
    return tenant


@extend_schema(responses={200: TenantSerializer(many=True), 403: SUPERUSER_ONLY})
class TenantListView(ListAPIView[Tenant]):
    """Every tenant, by slug."""

    permission_classes = OPERATOR_PERMISSIONS
    serializer_class = TenantSerializer
    pagination_class = cursor_pages("tenants", ("slug",))

    def get_queryset(self) -> QuerySet[Tenant]:
        return tenants_with_counts()


class TenantDetailView(APIView):
    """One tenant; ``PATCH`` sets its quotas and budget (``maxRunningTurns``,
    ``maxSessionsPerMinute``, ``maxOpenStreams``, ``maxStoredBytes``, ``monthlyBudgetUsd``;
    null: the platform's default)."""

    permission_classes = OPERATOR_PERMISSIONS

    @extend_schema(responses={200: TenantSerializer, 403: SUPERUSER_ONLY})
    def get(self, request: Request, tenant_slug: str) -> Response:
        return Response(TenantSerializer(tenant_or_404(tenant_slug)).data)

    @extend_schema(
        operation_id="tenant_quotas_update",
        request=TenantQuotasSerializer,
        responses={200: TenantQuotasSerializer, 403: SUPERUSER_ONLY},
    )
    def patch(self, request: Request, tenant_slug: str) -> Response:
        body = TenantQuotasSerializer(tenant_or_404(tenant_slug), data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        body.save()
        return Response(body.data)


@extend_schema(responses={200: PrincipalSerializer(many=True), 403: SUPERUSER_ONLY})
class PrincipalListView(ListAPIView[Principal]):
    """A tenant's principals, by name, with their admin account and active tokens."""

    permission_classes = OPERATOR_PERMISSIONS
    serializer_class = PrincipalSerializer
    pagination_class = cursor_pages("principals", ("name",))

    def get_queryset(self) -> QuerySet[Principal]:
        tenant = tenant_or_404(self.kwargs["tenant_slug"])
        active = Q(tokens__revoked_at__isnull=True) & (
            Q(tokens__expires_at__isnull=True) | Q(tokens__expires_at__gt=timezone.now())
        )
        return (
            Principal.objects.filter(tenant=tenant)
            .select_related("user")
            .annotate(active_tokens=Count("tokens", filter=active, distinct=True))
        )
