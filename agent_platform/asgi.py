"""ASGI entry point: HTTP through Django, WebSockets through Channels' router."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")

# Django must be set up before anything imports models (what get_asgi_application does).
django.setup(set_prefix=False)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agent_platform import daphne_limits, serving  # noqa: E402
from agent_platform.body_limit import BodyLimit  # noqa: E402
from agent_platform.handlers import StreamingASGIHandler  # noqa: E402
from agent_platform.ws_security import BrowserOriginValidator  # noqa: E402
from sessions_app.api.mcp_views import mcp_endpoints  # noqa: E402
from sessions_app.api.stream_views import detached_streams  # noqa: E402
from sessions_app.consumers import keep_server_send  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402

# Daphne itself refuses oversized bodies as they arrive, before it buffers them.
daphne_limits.install()
# Thousands of open event streams: as many sockets as the system allows, and garbage
# collection that does not stop the event loop for seconds.
serving.prepare()

django_asgi_app = StreamingASGIHandler()
application = ProtocolTypeRouter(
    {
        # Bodies over DATA_UPLOAD_MAX_MEMORY_SIZE get 413 before Django spools them.
        # detached_streams: an event stream's idle hours are served without Django's request.
        # mcp_endpoints: an MCP request the view let through is answered on the event loop.
        "http": mcp_endpoints(detached_streams(BodyLimit(django_asgi_app))),
        # Origin checked by scheme, host and port (the platform's own origin or
        # CSRF_TRUSTED_ORIGINS): a page of any other origin cannot open a socket with
        # the visitor's cookies (cross-site WebSocket hijacking).
        # The auth stack reads the playground's session cookie (signed-in staff).
        # keep_server_send: the stream consumer asks daphne's connection about backpressure.
        "websocket": keep_server_send(BrowserOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)
