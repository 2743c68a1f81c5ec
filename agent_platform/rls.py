"""Row-level security: whose rows the database lets this code see.

Every tenant-owned table has a Postgres policy (``agent_platform.rls_sql``) that shows a
row only when the connection's ``app.tenant_id`` setting names the row's tenant, or is
``*`` for work that spans tenants. With the setting empty, nothing is visible: a query
that forgets its tenant filter returns no rows instead of someone else's.

The setting follows a *scope*, held in a context variable so that it travels with the
code into threads and tasks (``sync_to_async`` copies it; a bare executor does not, see
``call_in_scope``):

- ``tenant_scope(tenant_id)``: the rows of one tenant. An API request enters it once its
  caller is known (``enter_tenant``, called by authentication), so the rest of the request,
  its stream included, is the caller's tenant.
- ``platform_scope()``: every tenant's rows, for work that legitimately spans tenants:
  the token lookup before the tenant is known, beat sweeps, retention, scheduling,
  superusers in the admin, management commands.
- neither: nothing.

The database backend (``agent_platform.postgres``) applies the scope to its connection
when a cursor is made and the scope differs from what the connection carries, and a
pooled connection is reset to "nothing" when it goes back to the pool, so no connection
carries one request's tenant into another. Under a role that bypasses RLS (a superuser,
the embedded SQLite form) the scope changes nothing.

Example::

    with rls.tenant_scope(session.tenant_id):
        run_the_agent()
    with rls.platform_scope():
        sweep_every_tenant()
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import ParamSpec, TypeVar

from django.http import HttpRequest, HttpResponse

P = ParamSpec("P")
R = TypeVar("R")

# The connection setting the policies read.
SETTING = "app.tenant_id"
NOBODY = ""
PLATFORM = "*"

_scope: contextvars.ContextVar[str] = contextvars.ContextVar("rls_scope")
# The scope of a context that entered none (a new thread's): nothing, except in processes
# that are the operator's own (manage.py commands, the test suite's set-up).
_process_default = NOBODY


def current() -> str:
    """The scope as the connection setting spells it: ``""``, ``"*"`` or a tenant's id."""
    return _scope.get(_process_default)


def make_platform_the_process_default() -> None:
    """Code of this process that entered no scope, in any thread, spans every tenant: for
    ``manage.py`` (an operator's commands) and the test suite's own set-up and checks.
    Requests still start with no scope (``ScopeMiddleware``)."""
    global _process_default  # one per process, set at its start
    _process_default = PLATFORM


def _tenant_value(tenant_id: int) -> str:
    if isinstance(tenant_id, bool) or not isinstance(tenant_id, int):
        raise TypeError(f"a tenant scope needs a tenant id, not {tenant_id!r}")
    return str(tenant_id)


@contextmanager
def _scoped(value: str) -> Iterator[None]:
    token = _scope.set(value)
    try:
        yield
    finally:
        _scope.reset(token)


def tenant_scope(tenant_id: int) -> AbstractContextManager[None]:
    """Inside: the rows of tenant ``tenant_id`` only.

    Raises:
        TypeError: ``tenant_id`` is not an int (None, a Tenant ...).
    """
    return _scoped(_tenant_value(tenant_id))


def platform_scope() -> AbstractContextManager[None]:
    """Inside: every tenant's rows. Only for work that spans tenants by design."""
    return _scoped(PLATFORM)


def scope_of(value: str) -> AbstractContextManager[None]:
    """Inside: the scope ``current()`` returned (to carry one to code that runs later)."""
    if value not in (NOBODY, PLATFORM) and not value.isdigit():
        raise ValueError(f"not a scope: {value!r}")
    return _scoped(value)


def tenant_or_platform_scope() -> AbstractContextManager[None]:
    """Inside: the current tenant's scope if there is one, else the platform's. For the
    registry of agents, whose policy shows a tenant its own and the shared ones (what it
    may see anyway) and which an unauthenticated request (a health check) reads too."""
    value = current()
    return _scoped(value if value.isdigit() else PLATFORM)


def no_scope() -> AbstractContextManager[None]:
    """Inside: nothing is visible (the default; for tests and probes)."""
    return _scoped(NOBODY)


def enter_tenant(tenant_id: int) -> None:
    """From here on in this context (a request, a consumer, a task): tenant ``tenant_id``.

    For authentication, which learns the tenant halfway through a request; the request
    starts with no scope again (``ScopeMiddleware``).
    """
    _scope.set(_tenant_value(tenant_id))


def enter_platform() -> contextvars.Token[str]:
    """From here on in this context: every tenant (a management command, a task).
    Returns what ``restore`` takes to go back to the scope before."""
    return _scope.set(PLATFORM)


def restore(token: contextvars.Token[str]) -> None:
    """Back to the scope before the ``enter_platform`` that returned ``token`` (or to
    nothing, when that was in another context)."""
    try:
        _scope.reset(token)
    except ValueError:
        reset()


def reset() -> None:
    """From here on in this context: nothing (the start of a request or a task)."""
    _scope.set(NOBODY)


def found_across_tenants(lookup: Callable[[], R | None]) -> R | None:
    """``lookup()`` in the current scope, and when it finds nothing, again across tenants.

    For the few lookups whose answer for another tenant's row is "forbidden", not "not
    found" (a session or artifact id): the caller must check ownership before using what
    this returns. The usual case, a row of the caller's own tenant, costs one query.
    """
    found = lookup()
    if found is None and current() != PLATFORM:
        with platform_scope():
            found = lookup()
    return found


def call_in_scope(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` bound to the current scope, for executors that do not copy the context
    (``loop.run_in_executor``): wherever it runs, it sees what its caller saw."""
    value = current()

    def bound(*args: P.args, **kwargs: P.kwargs) -> R:
        with _scoped(value):
            return func(*args, **kwargs)

    return bound


class ScopeMiddleware:
    """Each request starts with no scope; authentication enters the caller's tenant.

    The admin (and its dashboard) acts for the signed-in user: a superuser spans every
    tenant, a staff user is their principal's tenant, anyone else sees nothing.
    Afterwards the scope before the request is back, except for a streamed response:
    it is read after this returns, and must still see its tenant's rows.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _scope.set(NOBODY)
        if request.path.startswith("/admin/"):
            enter_for_user(getattr(request, "user", None))
        response = self.get_response(request)
        if not response.streaming:
            restore(token)
        return response


def enter_for_user(user: object) -> None:
    """The scope of a signed-in Django user: every tenant for a superuser, the linked
    principal's tenant for anyone else, nothing without one."""
    if user is None or not getattr(user, "is_authenticated", False):
        return
    if getattr(user, "is_superuser", False):
        enter_platform()
        return
    with platform_scope():
        principal = getattr(user, "principal", None)  # cached on the user for the request
    if principal is not None:
        enter_tenant(principal.tenant_id)
