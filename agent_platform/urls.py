from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from agent_platform import playground, views
from sessions_app.api.a2a_views import AgentCardView

urlpatterns = [
    path("", views.index, name="index"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    # Browsers ask for /favicon.ico on pages that name no icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    # Under admin/ (a reserved segment), so no agent's slug can shadow it.
    path("admin/dashboard/", views.dashboard, name="dashboard"),
    path("admin/extensions/", admin.site.admin_view(views.extensions_admin), name="extensions-admin"),
    path("admin/", admin.site.urls),
    path("api/", include("agent_platform.api.urls")),
    path("<str:agent_slug>/playground", playground.playground, name="playground"),
    path("<str:agent_slug>/playground/renderers", playground.ToolRenderersView.as_view(), name="playground-renderers"),
    # The A2A agent card, where A2A clients look for it: under the agent's base URL.
    path("<str:agent_slug>/.well-known/agent-card.json", AgentCardView.as_view(), name="agent-card"),
    # Everything else is an agent: /<slug>/v1/... (reserved segments never reach here).
    path("<str:agent_slug>/v1/", include("agents.api.urls")),
    path("<str:agent_slug>/v1/", include("sessions_app.api.urls")),
]

handler404 = "agent_platform.errors.json_not_found"
handler500 = "agent_platform.errors.json_server_error"
