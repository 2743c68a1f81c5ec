"""WebSocket routes. A path no route matches is accepted and closed with 4404, as an
unknown session is: Channels' router would otherwise raise, and the handshake fail
with an HTTP 500."""

from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import re_path

from sessions_app import consumers


class NoRouteConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        await self.accept()
        await self.close(consumers.CLOSE_NOT_FOUND)


# A segment of at most 100 characters with no NUL: a longer slug cannot be a folder name,
# and PostgreSQL cannot hold NUL; either is no route, so 4404.
SEGMENT = r"[^/\x00]{1,100}"

websocket_urlpatterns = [
    re_path(
        rf"^ws/(?P<agent_slug>{SEGMENT})/session/(?P<session_id>{SEGMENT})$",
        consumers.SessionStreamConsumer.as_asgi(),
    ),
    re_path(r"", NoRouteConsumer.as_asgi()),
]
