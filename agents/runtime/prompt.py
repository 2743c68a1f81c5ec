"""Prompt assembly: instructions (the agent's, then extension fragments), the
skills catalog, the A/B arm instructions, the workspace files and the memory note."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence

from agents.discovery import AgentSurface, ExtensionInfo, extension_context
from agents.sdk import ToolContext
from agents.sdk.memory import MEMORY_DIR

LOAD_SKILL_TOOL = "load_skill"


async def instructions_text(
    surface: AgentSurface, ctx: ToolContext, extensions: Mapping[str, ExtensionInfo] | None = None
) -> str:
    """The instruction parts joined in discovery order; dynamic parts rendered for this
    session, a mounted extension's with its ``ctx.extension``. ``extensions``: the mounts
    of the root agent (a subagent's surface has none of its own)."""
    mounts = surface.extensions if extensions is None else extensions
    parts: list[str] = []
    for entry in surface.instructions:
        part = entry.value
        if part.render is not None:
            rendered = part.render(dataclasses.replace(ctx, extension=extension_context(mounts, entry.extension)))
            text = await rendered if inspect.isawaitable(rendered) else rendered
            parts.append(str(text).strip())
        elif part.text:
            parts.append(part.text)
    return "\n\n".join(part for part in parts if part)


def skills_catalog(surface: AgentSurface) -> str:
    if not surface.skills:
        return ""
    lines = [f"- {name}: {entry.value.description}" for name, entry in surface.skills.items()]
    return f"Skills you can load with the {LOAD_SKILL_TOOL} tool when a task needs one:\n" + "\n".join(lines)


def arm_instructions(surface: AgentSurface, arms: Mapping[str, str]) -> str:
    """The instructions of each experiment arm this session was assigned."""
    texts = []
    for experiment, arm in sorted(arms.items()):
        entry = surface.experiments.get(experiment)
        if entry is not None and entry.value.instructions.get(arm):
            texts.append(entry.value.instructions[arm].strip())
    return "\n\n".join(texts)


def workspace_note(files: Sequence[str]) -> str:
    if not files:
        return ""
    return "Files in your workspace:\n" + "\n".join(f"- {path}" for path in sorted(files))


def memory_note(surface: AgentSurface, files: Sequence[str]) -> str:
    """One sentence naming the agent's notes from earlier sessions, where its file tools see them."""
    notes = sorted(path for path in files if path.startswith(f"{MEMORY_DIR}/"))
    if not notes:
        return ""
    rooted = surface.config.root is not None  # file tools see the root, where memory/ is /memory
    where, shown = (f"/{MEMORY_DIR}", [f"/{path}" for path in notes]) if rooted else (f"{MEMORY_DIR}/", notes)
    return f"{where} holds notes from earlier sessions (read-only): {', '.join(shown)}."


def system_prompt(
    surface: AgentSurface, instructions: str, arms: Mapping[str, str], workspace_files: Sequence[str]
) -> str:
    """The system prompt: ``instructions`` (rendered once per turn by ``instructions_text``),
    then the skills catalog, the arms' instructions, the workspace's files and its memory."""
    sections = [
        instructions,
        skills_catalog(surface),
        arm_instructions(surface, arms),
        workspace_note(workspace_files),
        memory_note(surface, workspace_files),
    ]
    return "\n\n".join(section for section in sections if section)
