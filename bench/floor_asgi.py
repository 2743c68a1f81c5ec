"""The ASGI applications ``bench/floor.py`` serves with daphne, one per ``FLOOR_APP``:

- ``raw``: a bare ASGI callable (reads the body, answers a small JSON): daphne's own cost;
- ``django``: Django's ASGI handler with no middleware and a plain view;
- ``django-middleware``: the same view behind the platform's whole ``MIDDLEWARE``;
- ``drf``: that, as a DRF ``APIView`` with no authentication or permission classes;
- ``django-commit``: no middleware, a view that inserts one row and commits (a durable write);
- ``django-read``: no middleware, a view that reads one row by its primary key.

Not the platform: what any request or write costs below it on this stack.
"""

from __future__ import annotations

import json
import os
from typing import Any

if os.environ["FLOOR_APP"] == "raw":

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        answer = json.dumps({"ok": True, "n": len(body)}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": answer})

else:
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.floor_settings"
    from django.core.asgi import get_asgi_application

    application = get_asgi_application()
