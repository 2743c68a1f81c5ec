"""Who may use the operator's routes: a superuser, that is a principal linked to an
active Django superuser. Everyone else gets 403 ``superuser_required`` on them, whatever
the route names (a tenant that exists or not), so nothing answers who else is there."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from agent_platform.auth import AuthenticatedPrincipal, caller
from agent_platform.errors import DomainError


class SuperuserRequired(DomainError):
    status, code = 403, "superuser_required"


def require_superuser(user: AuthenticatedPrincipal, what: str) -> None:
    """Raises:
    SuperuserRequired: unless ``user`` is a superuser (``what``: the refused thing)."""
    if not user.is_superuser:
        raise SuperuserRequired(f"Only a superuser may {what}.")


class IsSuperuser(BasePermission):
    """For a view's ``permission_classes``, after the defaults."""

    def has_permission(self, request: Request, view: Any) -> bool:
        require_superuser(caller(request), "use the tenant routes")
        return True
