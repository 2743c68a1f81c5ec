"""Origin checking for WebSocket handshakes (cross-site WebSocket hijacking).

A browser sends the page's origin with every handshake, and the playground's session
cookie with it. A handshake with an ``Origin`` is let through only if that origin is,
scheme, host and port alike:

- the handshake's own origin (the page was served by this platform): ``http`` for
  ``ws`` and ``https`` for ``wss`` (or what ``X-Forwarded-Proto`` says when
  ``BEHIND_TLS_PROXY`` is set, as for HTTP requests), the ``Host`` header's host and
  port, that host being one of ``ALLOWED_HOSTS``; or
- one of ``CSRF_TRUSTED_ORIGINS`` (``https://app.example.com:8443``), for a page
  served elsewhere.

So a page on another port of the same host, or on plain http where the platform is
served over https, is refused. A handshake without an ``Origin`` header is let through:
hijacking needs a browser, and browsers always send one, while scripts and SDK clients
usually do not (they still need a credential).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]


def parse_origin(value: str) -> Origin | None:
    """``(scheme, host, port)`` of an origin such as ``https://example.com``, the
    default port filled in; None for anything that is not a scheme and a host."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/") or parts.query or parts.username:
        return None
    return scheme, host, port or DEFAULT_PORTS[scheme]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def own_origin(scope: dict[str, Any]) -> Origin | None:
    """The origin a browser addressed this handshake to, if its host is allowed."""
    host = _header(scope, b"host")
    if host is None:
        return None
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    secure = scope.get("scheme") == "wss"
    proxy_header = settings.SECURE_PROXY_SSL_HEADER
    if proxy_header:
        name, value = proxy_header
        header = name.removeprefix("HTTP_").replace("_", "-").lower().encode()
        forwarded = _header(scope, header)
        secure = secure or (forwarded is not None and forwarded.split(",")[0].strip() == value)
    return parse_origin(f"{'https' if secure else 'http'}://{host}")


def allowed_origin(scope: dict[str, Any], origin: str) -> bool:
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    trusted = {parse_origin(value) for value in settings.CSRF_TRUSTED_ORIGINS}
    return parsed == own_origin(scope) or parsed in trusted


class BrowserOriginValidator:
    """ASGI middleware for WebSockets: refuses a handshake whose ``Origin`` is not allowed
    (see the module docstring) before the application sees it."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        origin = _header(scope, b"origin")
        if origin is None or allowed_origin(scope, origin):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
