"""ASGI entry point: HTTP through Django, WebSockets through Channels' router."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")

# Django must be set up before anything imports models (what get_asgi_application does).
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agent_platform.handlers import StreamingASGIHandler  # noqa: E402
from agent_platform.ws_security import BrowserOriginValidator  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402

django_asgi_app = StreamingASGIHandler()
application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Origin checked against ALLOWED_HOSTS: a page on another site cannot
        # open a socket with the visitor's cookies (cross-site WebSocket hijacking).
        "websocket": BrowserOriginValidator(URLRouter(websocket_urlpatterns)),
    }
)
