from django.urls import path

from sessions_app.api import views

urlpatterns = [
    path("sessions", views.SessionListView.as_view(), name="session-list"),
    path("session/<str:session_id>", views.SessionDetailView.as_view(), name="session-detail"),
    path("session/<str:session_id>/events", views.SessionEventsView.as_view(), name="session-events"),
]
