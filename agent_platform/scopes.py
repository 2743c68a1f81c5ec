"""Token scopes: which routes a bearer token may call.

A token carries some of ``read``, ``sessions`` and ``manage`` (``TokenScope``). A route
under ``/api/`` (the management API) needs ``manage``, or ``read`` for a GET; every other
route (an agent's, ``/<slug>/...``) needs ``sessions``, or ``read`` for a GET. A view
may name its own set in ``token_scopes`` (``MeView``: any scope). Credentials that are
not a token (the playground's session cookie, the local developer in dev mode) hold
every scope.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from agent_platform.auth import optional_caller
from agent_platform.models import ApiToken, TokenScope

ANY_SCOPE = frozenset(TokenScope.values)
MANAGEMENT_PREFIX = "/api/"


class InsufficientScope(PermissionDenied):
    """403 ``insufficient_scope``. (A DRF exception, not a ``DomainError``: this module is
    loaded while DRF reads its settings, before ``agent_platform.errors`` can be.)"""

    default_code = "insufficient_scope"


def required_scopes(path: str, method: str) -> frozenset[str]:
    """The scopes of which a token needs one to call ``method path``."""
    reading = method.upper() in SAFE_METHODS
    own = TokenScope.MANAGE if path.startswith(MANAGEMENT_PREFIX) else TokenScope.SESSIONS
    return frozenset({own, TokenScope.READ} if reading else {own})


def check_token_scopes(token: ApiToken | None, needed: frozenset[str]) -> None:
    """Raises:
    InsufficientScope: when ``token`` holds none of ``needed``."""
    if token is None or token.allows(needed):
        return
    names = " or ".join(repr(scope) for scope in sorted(needed))
    raise InsufficientScope(f"This token lacks the scope this route needs ({names}).")


class TokenScopePermission(BasePermission):
    """The default permission's second half (after ``IsAuthenticated``)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = optional_caller(request)
        if user is None:
            return True  # IsAuthenticated (or the view's own permissions) decide
        needed = getattr(view, "token_scopes", None)
        if needed is None:
            needed = required_scopes(request.path_info, request.method or "GET")
        check_token_scopes(user.token, frozenset(needed))
        return True
