"""Markdown files with YAML front matter (skills, schedules, plugin agents and commands)."""

from __future__ import annotations

from typing import Any

import yaml


class FrontMatterError(ValueError):
    pass


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)``; a file without front matter has ``{}``.

    Raises:
        FrontMatterError: for front matter that is not a YAML mapping or is not closed.
    """
    if not text.startswith("---"):
        return {}, text.strip()
    lines = text.splitlines()
    try:
        end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration:
        raise FrontMatterError("front matter opened with '---' is never closed") from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as error:
        raise FrontMatterError(f"front matter is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise FrontMatterError(f"front matter must be a mapping, not {type(data).__name__}")
    return data, "\n".join(lines[end + 1 :]).strip()
