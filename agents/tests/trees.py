"""Agent trees on disk for tests: ``{relative path: text}`` becomes files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from agents.discovery import AgentSurface, Diagnostic

# The one file every root agent needs; trees include it unless a test is about its absence.
INSTRUCTIONS = {"agent/instructions.md": "You help people."}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write each ``{relative path: text}`` under ``root`` (text dedented) and return ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def codes(surface: AgentSurface) -> list[str]:
    """The diagnostic ids of the agent and its subagents, in discovery order."""
    return [d.code.id for d in surface.all_diagnostics()]


def only(surface: AgentSurface, code: str) -> Diagnostic:
    """The single diagnostic with this id (fails when there is none or several)."""
    found = [d for d in surface.all_diagnostics() if d.code.id == code]
    assert len(found) == 1, [str(d) for d in surface.all_diagnostics()]
    return found[0]
