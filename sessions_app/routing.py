from django.urls import path

from sessions_app import consumers

websocket_urlpatterns = [
    path("ws/<str:agent_slug>/session/<str:session_id>", consumers.SessionStreamConsumer.as_asgi()),
]
