"""Who is calling: bearer tokens, and the anonymous local developer in dev mode.

A request that authenticates carries ``request.user``, an ``AuthenticatedPrincipal``
with ``.principal`` and ``.tenant``. The DRF class below is the only way in for the
API; it answers 401 with ``WWW-Authenticate: Bearer`` for a missing, malformed,
unknown, revoked or expired token. A token's scopes are
checked by ``agent_platform.scopes``.

A token's principal is remembered for ``TOKEN_CACHE_SECONDS`` (a few seconds) so that
a client's requests do not each look it up again. Saving or deleting a token, a
principal or a tenant forgets every remembered token of this process at once, so a
revocation holds at once in the process that made it, and in other processes within
``TOKEN_CACHE_SECONDS``.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, CSRFCheck, get_authorization_header
from rest_framework.request import Request

from agent_platform import rls
from agent_platform.conf import platform_settings
from agent_platform.models import ApiToken, Principal, Tenant, hash_token

DEV_TENANT_SLUG = "local"
DEV_PRINCIPAL_NAME = "dev"


@dataclass(frozen=True)
class AuthenticatedPrincipal:
    """The ``request.user`` of an API call: a principal of a tenant."""

    principal: Principal
    token: ApiToken | None = None
    # The anonymous developer on loopback in dev mode operates the whole local
    # platform: the playground lists and opens every principal's sessions.
    sees_all_sessions: bool = False

    is_authenticated = True
    is_anonymous = False

    @property
    def tenant(self) -> Tenant:
        return self.principal.tenant

    @property
    def is_superuser(self) -> bool:
        """A principal linked to an active Django superuser operates every tenant."""
        user = self.principal.user
        return user is not None and user.is_active and user.is_superuser

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
    with rls.platform_scope(), transaction.atomic():
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


# hash of an active token -> (its principal, when the entry expires on time.monotonic())
_remembered: dict[str, tuple[AuthenticatedPrincipal, float]] = {}
MAX_REMEMBERED_TOKENS = 10_000
# Moves on whenever the remembered tokens are forgotten: a lookup that read the token
# before a revocation then does not remember what it read.
_generation = 0
_clock = time.monotonic  # (tests move it on)


def principal_for_token(token: str) -> AuthenticatedPrincipal | None:
    """The active token's principal, or None for an unknown, revoked or expired token."""
    digest = hash_token(token)
    now = _clock()
    remembered = _remembered.get(digest)
    if remembered is not None and remembered[1] > now:
        user = remembered[0]
    else:
        generation = _generation
        with rls.platform_scope():  # the tenant is what this finds out
            row = ApiToken.objects.active().select_related("principal__tenant").filter(token_hash=digest).first()
        if row is None:
            _remembered.pop(digest, None)
            return None
        user = AuthenticatedPrincipal(principal=row.principal, token=row)
        seconds = platform_settings.TOKEN_CACHE_SECONDS
        if seconds > 0 and generation == _generation:
            if len(_remembered) >= MAX_REMEMBERED_TOKENS:
                _remembered.clear()
            _remembered[digest] = (user, now + seconds)
    if user.token is not None:
        if user.token.is_expired:  # a remembered token can expire while remembered
            return None
        with rls.platform_scope():
            user.token.touch()
    return user


def remembered_tenant(scope: dict[str, Any]) -> int | None:
    """The tenant of the request's bearer token if this process remembers the token
    (no database read: for deciding whose turn a request is before it runs), else None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            try:
                token = bearer_token(value)
            except exceptions.AuthenticationFailed:
                return None
            remembered = _remembered.get(hash_token(token)) if token else None
            return None if remembered is None else remembered[0].principal.tenant_id
    return None


@receiver(post_save, sender=ApiToken)
@receiver(post_delete, sender=ApiToken)
@receiver(post_save, sender=Principal)
@receiver(post_delete, sender=Principal)
@receiver(post_save, sender=Tenant)
@receiver(post_delete, sender=Tenant)
def forget_remembered_tokens(**kwargs: Any) -> None:
    """A token, principal or tenant changed (a revocation, say): look every token up again."""
    global _generation  # one counter per process
    _generation += 1
    _remembered.clear()


def principal_for_user(user: Any) -> AuthenticatedPrincipal | None:
    """The principal linked to a signed-in Django user (staff using the playground), or None."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    with rls.platform_scope():  # the tenant is what this finds out
        principal = Principal.objects.select_related("tenant").filter(user_id=user.pk).first()
    return None if principal is None else AuthenticatedPrincipal(principal=principal)


def local_developer() -> AuthenticatedPrincipal:
    """The anonymous loopback caller in dev mode."""
    return AuthenticatedPrincipal(principal=get_dev_principal(), sees_all_sessions=True)


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
    Then the playground's session cookie (a signed-in user linked to a principal;
    the origin check in ``ws_security`` keeps other sites from using it). In dev
    mode a loopback handshake without credentials is the dev principal.
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
    found = _websocket_caller(scope, headers, token)
    if found is not None:
        enter_scope_of(found)
    return found


def enter_scope_of(user: AuthenticatedPrincipal) -> None:
    """The rest of the request sees what ``user`` may (``agent_platform.rls``): its tenant;
    every tenant for the local developer in dev mode, who operates the whole local platform."""
    if user.sees_all_sessions:
        rls.enter_platform()
    else:
        rls.enter_tenant(user.principal.tenant_id)


def _websocket_caller(
    scope: dict[str, Any], headers: dict[str, bytes], token: str | None
) -> AuthenticatedPrincipal | None:
    if token is not None:
        return principal_for_token(token)
    signed_in = principal_for_user(scope.get("user"))
    if signed_in is not None:
        return signed_in
    client = scope.get("client") or ("", 0)
    forwarded = "x-forwarded-for" in headers or "forwarded" in headers
    if platform_settings.DEV and _is_loopback_address(client[0], forwarded):
        return local_developer()
    return None


class BearerTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <token>``. Without one: the playground's session cookie
    (a signed-in Django user linked to a principal; CSRF-checked like Django's own
    forms), and in dev mode, loopback calls act as the local developer."""

    def authenticate(self, request: Request) -> tuple[AuthenticatedPrincipal, ApiToken | None] | None:
        """The caller, whose tenant the rest of the request sees (``agent_platform.rls``)."""
        found = self._caller(request)
        if found is not None:
            enter_scope_of(found[0])
        return found

    def _caller(self, request: Request) -> tuple[AuthenticatedPrincipal, ApiToken | None] | None:
        token = bearer_token(get_authorization_header(request))
        if token is None:
            signed_in = principal_for_user(getattr(request._request, "user", None))
            if signed_in is not None:
                self._enforce_csrf(request)
                return signed_in, None
            if platform_settings.DEV and is_loopback_request(request._request):
                return local_developer(), None
            return None
        user = principal_for_token(token)
        if user is None:
            raise exceptions.AuthenticationFailed("The bearer token is unknown, revoked or expired.")
        return user, user.token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'

    @staticmethod
    def _enforce_csrf(request: Request) -> None:
        """A cookie is sent by the browser on its own, so writes must carry the CSRF token."""
        check = CSRFCheck(lambda r: None)  # type: ignore[arg-type]
        check.process_request(request._request)
        reason = check.process_view(request._request, None, (), {})  # type: ignore[arg-type]
        if reason:
            raise exceptions.PermissionDenied(f"CSRF failed: {reason}")
