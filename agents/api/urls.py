from django.urls import path

from agents.api import views

urlpatterns = [
    path("health", views.HealthView.as_view(), name="agent-health"),
]
