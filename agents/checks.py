"""Agent diagnostics as Django system checks.

``python manage.py check`` (and so ``runserver`` and ``migrate``) discovers every
agent folder of ``AGENTS_DIR`` and reports each diagnostic under its own id
(``agents.E001``...) with its hint; errors make the command exit non-zero.
``python manage.py check --tag agents`` runs these checks alone. Agents deployed by
tenants are checked when they are uploaded, not here (they live in the database).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, Warning, register

from agents.config import outbound_policy
from agents.discovery import Diagnostic, discover
from agents.registry import agent_folders

TAG = "agents"


@register(TAG)
def check_agents(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """One message per diagnostic of each agent folder of ``AGENTS_DIR``."""
    if app_configs is not None and not any(config.name == "agents" for config in app_configs):
        return []
    messages: list[CheckMessage] = []
    for slug, folder in agent_folders().items():
        surface, loader = discover(folder, slug, outbound=outbound_policy())
        loader.unload()
        messages += [as_check_message(slug, diagnostic) for diagnostic in surface.all_diagnostics()]
    return messages


def as_check_message(slug: str, diagnostic: Diagnostic) -> CheckMessage:
    """``<slug>/<path>: (agents.E001) <message>`` with the diagnostic's hint."""
    kind = Error if diagnostic.is_error else Warning
    return kind(diagnostic.message, hint=diagnostic.code.hint, obj=f"{slug}/{diagnostic.path}", id=diagnostic.code.id)
