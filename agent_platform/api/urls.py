from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from agent_platform.api import agent_views, docs_views, tenancy_views, usage_views, views
from agents.api import secrets

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(permission_classes=[]), name="openapi-schema"),
    # The schema read by people: Swagger UI and Redoc from this origin (drf-spectacular-sidecar),
    # their scripts files of their own (the Content-Security-Policy runs no inline script).
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="openapi-schema",
            authentication_classes=[],
            permission_classes=[],
            template_name="api_docs/swagger.html",
        ),
        name="api-docs",
    ),
    path("docs/redoc/", docs_views.RedocView.as_view(), name="api-redoc"),
    path("docs/redoc/redoc.standalone.js", docs_views.redoc_bundle, name="api-redoc-bundle"),
    path("v1/me", views.MeView.as_view(), name="me"),
    path("v1/tokens", views.TokenListView.as_view(), name="token-list"),
    path("v1/tokens/<str:prefix>", views.TokenDetailView.as_view(), name="token-detail"),
    path("v1/agents", views.AgentListView.as_view(), name="agent-list"),
    path("v1/agents/<str:agent_slug>", agent_views.AgentDetailView.as_view(), name="agent-detail"),
    path("v1/usage", usage_views.UsageView.as_view(), name="usage"),
    path("v1/tenants", tenancy_views.TenantListView.as_view(), name="tenant-list"),
    path("v1/tenants/<str:tenant_slug>", tenancy_views.TenantDetailView.as_view(), name="tenant-detail"),
    path("v1/tenants/<str:tenant_slug>/principals", tenancy_views.PrincipalListView.as_view(), name="principal-list"),
    path("v1/agents/<str:agent_slug>/deployments", views.DeploymentListView.as_view(), name="deployment-list"),
    path(
        "v1/agents/<str:agent_slug>/deployments/<str:deployment_id>/activate",
        views.DeploymentActivateView.as_view(),
        name="deployment-activate",
    ),
    path("v1/agents/<str:agent_slug>/secrets", secrets.AgentSecretListView.as_view(), name="agent-secret-list"),
    path(
        "v1/agents/<str:agent_slug>/secrets/<str:secret_name>", secrets.AgentSecretView.as_view(), name="agent-secret"
    ),
]
