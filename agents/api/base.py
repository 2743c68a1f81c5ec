"""The base of every per-agent view: the agent of the URL, resolved once.

``AgentView`` resolves ``/<slug>/`` before its handler runs (404 when there is no such
agent or another tenant's, 503 when its tree has errors), so a handler starts from
``self.agent`` and ``self.surface``. Errors are raised as ``DomainError`` and become
the envelope in ``agent_platform.errors.api_exception_handler``.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.views import APIView

from agent_platform.auth import optional_caller
from agent_platform.errors import DomainError
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.registry import get_visible_agent, served_row, surface_for, visible_to

MAX_DIAGNOSTICS_IN_MESSAGE = 3
# Longer than any slug a row can hold: never looked up (a folder name that long is an OS error).
MAX_SLUG_CHARS = Agent._meta.get_field("slug").max_length or 100


class AgentNotFound(DomainError):
    status, code = 404, "agent_not_found"


class AgentNotServed(DomainError):
    status, code = 503, "agent_invalid"


def served_agent(
    request: Request, slug: str, *, allow_invalid: bool = False, row: Agent | None = None
) -> tuple[Agent, AgentSurface]:
    """The agent of the URL and its surface. ``row``: the agent's row if the caller has
    read it already (with a session, say); else it is looked up.

    Raises:
        AgentNotFound: there is no such agent, or it belongs to another tenant.
        AgentNotServed: its tree has errors (unless ``allow_invalid``).
    """
    if len(slug) > MAX_SLUG_CHARS or "\x00" in slug:
        raise AgentNotFound(f"No agent is served there: a slug has at most {MAX_SLUG_CHARS} characters and no NUL.")
    user = optional_caller(request)
    tenant = user.tenant if user is not None else None
    agent = get_visible_agent(slug, tenant) if row is None else visible_to(served_row(slug, row), tenant)
    if agent is None:
        raise AgentNotFound(f"No agent is served at /{slug}/.")
    surface = surface_for(agent)
    # The request's agent, for its agent_sdk.http span (agent_platform.telemetry).
    setattr(getattr(request, "_request", request), "agent_surface", surface)  # noqa: B010
    if surface.errors and not allow_invalid:
        shown = "; ".join(str(d) for d in surface.errors[:MAX_DIAGNOSTICS_IN_MESSAGE])
        raise AgentNotServed(f"Agent {slug!r} is not served: {shown}")
    return agent, surface


class AgentView(APIView):
    """A view under ``/<slug>/``: ``self.agent`` and ``self.surface`` are resolved before
    the handler runs. ``allow_invalid_agent``: answer for an agent whose tree has errors
    (health, info, logs: they matter most then)."""

    allow_invalid_agent = False
    agent: Agent
    surface: AgentSurface

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # A method with no handler stays 405, whatever the path names.
        method = (request.method or "").lower()
        if method in self.http_method_names and hasattr(self, method):
            self.resolve(request, **kwargs)

    def resolve(self, request: Request, agent_slug: str, **kwargs: Any) -> None:
        """Set what the handler starts from; subclasses resolve more (a session)."""
        self.agent, self.surface = served_agent(request, agent_slug, allow_invalid=self.allow_invalid_agent)
