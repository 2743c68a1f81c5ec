"""Origin checking for WebSocket handshakes."""

from __future__ import annotations

from typing import Any
from urllib.parse import ParseResult

from channels.security.websocket import OriginValidator
from django.conf import settings


class BrowserOriginValidator(OriginValidator):
    """Refuses handshakes whose ``Origin`` is not one of ``ALLOWED_HOSTS``.

    A handshake without an ``Origin`` header is let through: cross-site
    WebSocket hijacking needs a browser, and browsers always send one, while
    scripts and SDK clients usually do not (they still need a credential).
    """

    def __init__(self, application: Any) -> None:
        super().__init__(application, list(settings.ALLOWED_HOSTS))

    def valid_origin(self, parsed_origin: ParseResult | None) -> bool:
        if parsed_origin is None:
            return True
        return bool(self.validate_origin(parsed_origin))
