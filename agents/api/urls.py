from django.urls import path

from agents.api import views

urlpatterns = [
    path("health", views.HealthView.as_view(), name="agent-health"),
    path("info", views.InfoView.as_view(), name="agent-info"),
    path("tools", views.ToolListView.as_view(), name="agent-tools"),
]
