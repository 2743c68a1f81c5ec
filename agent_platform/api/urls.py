from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from agent_platform.api import tenant_views, views

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(permission_classes=[]), name="openapi-schema"),
    path("v1/me", views.MeView.as_view(), name="me"),
    path("v1/tokens", views.TokenListView.as_view(), name="token-list"),
    path("v1/tokens/<str:prefix>", views.TokenDetailView.as_view(), name="token-detail"),
    path("v1/agents", views.AgentListView.as_view(), name="agent-list"),
    path("v1/tenants/<str:tenant_slug>", tenant_views.TenantQuotasView.as_view(), name="tenant-quotas"),
]
