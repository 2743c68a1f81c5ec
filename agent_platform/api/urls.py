from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from agent_platform.api import views
from agents.api import secrets

urlpatterns = [
    path("schema", SpectacularAPIView.as_view(permission_classes=[]), name="openapi-schema"),
    path("v1/me", views.MeView.as_view(), name="me"),
    path("v1/tokens", views.TokenListView.as_view(), name="token-list"),
    path("v1/tokens/<str:prefix>", views.TokenDetailView.as_view(), name="token-detail"),
    path("v1/agents", views.AgentListView.as_view(), name="agent-list"),
    path("v1/agents/<str:agent_slug>/secrets", secrets.AgentSecretListView.as_view(), name="agent-secret-list"),
    path(
        "v1/agents/<str:agent_slug>/secrets/<str:secret_name>", secrets.AgentSecretView.as_view(), name="agent-secret"
    ),
]
