"""WSGI entry point. The platform is served over ASGI (streams, WebSockets); this
exists for tools that expect it."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")

application = get_wsgi_application()
