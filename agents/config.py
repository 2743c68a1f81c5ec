"""The runtime's settings, read from the platform's settings in one place."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence

from agent_platform.conf import platform_settings
from agents.discovery import AgentSurface
from agents.models import Agent
from agents.runtime.mcp.connections import McpConnections
from agents.runtime.outbound import OutboundPolicy
from agents.runtime.providers.gateway import ProviderSettings, missing_key
from agents.runtime.turn import RuntimeSettings
from agents.secrets import adeclared_secrets, aresolve


def default_model(surface: AgentSurface | None = None, purpose: str = "live") -> str:
    """The model of a session whose agent names none: for an eval session, the evals
    config's ``model`` when it sets one; else ``PLATFORM["DEFAULT_MODEL"]``."""
    config = surface.evals_config if surface is not None and purpose == "eval" else None
    return config.model if config is not None and config.model else platform_settings.DEFAULT_MODEL


def runtime_settings(surface: AgentSurface | None = None, purpose: str = "live") -> RuntimeSettings:
    """The settings a turn runs with; ``surface`` and ``purpose`` (the session's) pick
    its default model (``default_model``)."""
    return RuntimeSettings(
        default_model=default_model(surface, purpose),
        providers=ProviderSettings(
            openai_api_key=platform_settings.OPENAI_API_KEY,
            openai_base_url=platform_settings.OPENAI_BASE_URL,
            anthropic_api_key=platform_settings.ANTHROPIC_API_KEY,
            anthropic_base_url=platform_settings.ANTHROPIC_BASE_URL,
        ),
        price_overrides=platform_settings.MODEL_PRICES,
    )


def outbound_policy() -> OutboundPolicy:
    """Where agent-initiated HTTP may go: public https, plus ``PLATFORM['OUTBOUND_ALLOW']``."""
    return OutboundPolicy(allow=tuple(platform_settings.OUTBOUND_ALLOW))


def missing_model_keys(surface: AgentSurface) -> dict[str, str]:
    """``{model id: unset variable}`` for the models the agent and its subagents would run
    on (their own, else ``AGENT_DEFAULT_MODEL``) whose provider key is not set: each such
    turn would fail with "OPENAI_API_KEY is not set"."""
    settings = runtime_settings()
    missing: dict[str, str] = {}
    surfaces = [surface]
    while surfaces:
        current = surfaces.pop()
        model = current.config.model or settings.default_model
        variable = missing_key(model, settings.providers)
        if variable is not None:
            missing[model] = variable
        surfaces += current.subagents.values()
    return missing


def mcp_connections(agent: Agent, surface: AgentSurface) -> McpConnections:
    """``ctx.host.mcp`` and the model's MCP tools for ``agent``: its secrets by name, the
    platform's outbound policy, the process's session pool."""
    return McpConnections(surface, secret=lambda name: aresolve(name, agent=agent), policy=outbound_policy())


def local_mcp_connections(surface: AgentSurface) -> McpConnections:
    """The same for an in-process run of a folder (``agent run``, ``agent eval``, ``agent
    info``): no agent row, so nothing stored: secrets come from the environment, as a shared agent's do."""
    return mcp_connections(Agent(slug=surface.slug, path=str(surface.path)), surface)


def local_secrets(surface: AgentSurface) -> Callable[[Sequence[str]], Awaitable[Mapping[str, str]]]:
    """``ctx.secrets`` of an in-process run of a folder: as a shared agent's, from the
    environment (no agent row, so nothing stored)."""
    return functools.partial(adeclared_secrets, Agent(slug=surface.slug, path=str(surface.path)))
