"""Secrets by name: the lookup lives in ``agents.secrets`` (MCP connections in
``agents/`` resolve them too); imported from here by the packs and webhooks."""

from __future__ import annotations

from agents.secrets import resolve_secret

__all__ = ["resolve_secret"]
