from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from agent_platform.api import agent_views, tenancy_views, usage_views, views

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(permission_classes=[]), name="openapi-schema"),
    path("v1/me", views.MeView.as_view(), name="me"),
    path("v1/tokens", views.TokenListView.as_view(), name="token-list"),
    path("v1/tokens/<str:prefix>", views.TokenDetailView.as_view(), name="token-detail"),
    path("v1/agents", views.AgentListView.as_view(), name="agent-list"),
    path("v1/agents/<str:agent_slug>", agent_views.AgentDetailView.as_view(), name="agent-detail"),
    path("v1/usage", usage_views.UsageView.as_view(), name="usage"),
    path("v1/tenants", tenancy_views.TenantListView.as_view(), name="tenant-list"),
    path("v1/tenants/<str:tenant_slug>", tenancy_views.TenantDetailView.as_view(), name="tenant-detail"),
    path("v1/tenants/<str:tenant_slug>/principals", tenancy_views.PrincipalListView.as_view(), name="principal-list"),
]
