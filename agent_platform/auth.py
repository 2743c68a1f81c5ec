"""Who is calling: bearer tokens, and the anonymous local developer in dev mode.

A request that authenticates carries ``request.user``, an ``AuthenticatedPrincipal``
with ``.principal`` and ``.tenant``. The DRF class below is the only way in for the
API; it answers 401 with ``WWW-Authenticate: Bearer`` for a missing, malformed,
unknown or revoked token.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from agent_platform.conf import platform_settings
from agent_platform.models import ApiToken, Principal, Tenant, hash_token

DEV_TENANT_SLUG = "local"
DEV_PRINCIPAL_NAME = "dev"


@dataclass(frozen=True)
class AuthenticatedPrincipal:
    """The ``request.user`` of an API call: a principal of a tenant."""

    principal: Principal
    token: ApiToken | None = None

    is_authenticated = True
    is_anonymous = False

    @property
    def tenant(self) -> Tenant:
        return self.principal.tenant

    def __str__(self) -> str:
        return str(self.principal)


def caller(request: Request) -> AuthenticatedPrincipal:
    """The authenticated principal of a request on a route that requires one.

    Raises:
        NotAuthenticated: when the request carries no admitted credential.
    """
    user = optional_caller(request)
    if user is None:
        raise exceptions.NotAuthenticated()
    return user


def optional_caller(request: Request) -> AuthenticatedPrincipal | None:
    """The authenticated principal of a request, or None on an open route."""
    user = request.user
    return user if isinstance(user, AuthenticatedPrincipal) else None


def get_dev_principal() -> Principal:
    """The principal anonymous loopback calls act as in dev mode (tenant ``local``)."""
    with transaction.atomic():
        tenant, _ = Tenant.objects.get_or_create(slug=DEV_TENANT_SLUG, defaults={"name": "Local development"})
        principal, _ = Principal.objects.get_or_create(tenant=tenant, name=DEV_PRINCIPAL_NAME)
    return principal


def _is_loopback_address(host: str, forwarded: bool) -> bool:
    if forwarded:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_request(request: HttpRequest) -> bool:
    """True only for a direct call from this machine.

    A forwarded request is never treated as local: a proxy on loopback may be
    relaying a caller from anywhere.
    """
    meta = request.META
    forwarded = "HTTP_X_FORWARDED_FOR" in meta or "HTTP_FORWARDED" in meta
    return _is_loopback_address(meta.get("REMOTE_ADDR", ""), forwarded)


def principal_for_token(token: str) -> AuthenticatedPrincipal | None:
    """The active token's principal, or None for an unknown or revoked token."""
    row = ApiToken.objects.active().select_related("principal__tenant").filter(token_hash=hash_token(token)).first()
    if row is None:
        return None
    row.touch()
    return AuthenticatedPrincipal(principal=row.principal, token=row)


def bearer_token(header: bytes) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None if absent.

    Raises:
        AuthenticationFailed: when a header is present but is not a single bearer token.
    """
    parts = header.split()
    if not parts:
        return None
    if parts[0].lower() != b"bearer" or len(parts) != 2:
        raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <token>'.")
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        raise exceptions.AuthenticationFailed("The bearer token is not ASCII.") from None


def authenticate_websocket(scope: dict[str, Any]) -> AuthenticatedPrincipal | None:
    """The caller of a WebSocket handshake, or None.

    Credentials come from an ``Authorization: Bearer`` header or, since browsers
    cannot set headers on a WebSocket, from the subprotocol list
    ``["bearer", "<token>"]``. Never from the query string, which ends up in logs.
    In dev mode a loopback handshake without credentials is the dev principal.
    """
    headers = {name.decode("latin-1").lower(): value for name, value in scope.get("headers", [])}
    token = None
    try:
        token = bearer_token(headers.get("authorization", b""))
    except exceptions.AuthenticationFailed:
        return None
    protocols: list[str] = list(scope.get("subprotocols") or [])
    if token is None and "bearer" in protocols:
        position = protocols.index("bearer")
        token = protocols[position + 1] if position + 1 < len(protocols) else None
    if token is not None:
        return principal_for_token(token)
    client = scope.get("client") or ("", 0)
    forwarded = "x-forwarded-for" in headers or "forwarded" in headers
    if platform_settings.DEV and _is_loopback_address(client[0], forwarded):
        return AuthenticatedPrincipal(principal=get_dev_principal())
    return None


class BearerTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <token>``; in dev mode, loopback calls without one
    act as the local dev principal."""

    def authenticate(self, request: Request) -> tuple[AuthenticatedPrincipal, ApiToken | None] | None:
        token = bearer_token(get_authorization_header(request))
        if token is None:
            if platform_settings.DEV and is_loopback_request(request._request):
                return AuthenticatedPrincipal(principal=get_dev_principal()), None
            return None
        user = principal_for_token(token)
        if user is None:
            raise exceptions.AuthenticationFailed("The bearer token is unknown or revoked.")
        return user, user.token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
