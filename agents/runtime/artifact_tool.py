"""The ``tag_artifact`` model tool (DESIGN.md §9.5): offered only when ``artifacts.py`` says
``tag_artifact=True``; it keeps a file for people through ``ctx.artifacts.tag``.

The content is ``content`` (text) or the file at ``path``: read from the agent's ``root``
FileSystem when it has one, else from the session workspace (never outside it). Whatever
goes wrong (an unknown kind, a missing file, no content) is an ``isError`` result the
model can correct; it never ends the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.runtime.fs.base import FileSystem, FileSystemError
from agents.runtime.providers.base import ToolSpec
from agents.runtime.tool_calls import CallResult, error, schema_arguments
from agents.sdk import ArtifactsConfig, ToolContext

TAG_ARTIFACT_TOOL = "tag_artifact"
# Read no more than this from a path: the platform's own size limit applies after it.
MAX_READ_BYTES = 64 * 1024 * 1024


def tag_artifact_spec(config: ArtifactsConfig) -> ToolSpec:
    kinds = "; ".join(f"{kind}: {text}" if text else kind for kind, text in config.kinds.items())
    return ToolSpec(
        TAG_ARTIFACT_TOOL,
        "Keep a file for people to see later (a report, a digest, a patch). Give `content` as text, "
        "or `path` to keep a file you wrote. Tagging the same kind and name again replaces it. "
        f"Kinds: {kinds}.",
        {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "description": "One of the kinds above."},
                "name": {"type": "string", "description": "A file name, e.g. report.md."},
                "path": {"type": "string", "description": "A file to keep, instead of content."},
                "content": {"type": "string", "description": "The text to keep, instead of path."},
                "contentType": {"type": "string", "description": "A media type, e.g. text/markdown."},
            },
            "required": ["kind", "name"],
            "additionalProperties": False,
        },
    )


def _read_workspace_file(workspace: Path, path: str) -> bytes:
    base = workspace.resolve()
    target = (base / path.lstrip("/")).resolve()
    if not target.is_relative_to(base) or not target.is_file():
        raise FileNotFoundError(f"no file {path!r} in the session workspace")
    with target.open("rb") as file:
        data = file.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise ValueError(f"{path!r} is larger than {MAX_READ_BYTES} bytes")
    return data


async def _content(
    arguments: dict[str, Any], ctx: ToolContext, filesystem: Callable[[], FileSystem] | None
) -> bytes | str:
    if ("path" in arguments) == ("content" in arguments):
        raise ValueError("give exactly one of path and content")
    if "content" in arguments:
        return str(arguments["content"])
    path = str(arguments["path"])
    if filesystem is not None:
        return await filesystem().read(path)
    if ctx.workspace is None:
        raise FileNotFoundError("this run has no session workspace to read a path from")
    return await asyncio.to_thread(_read_workspace_file, ctx.workspace, path)


async def run_tag_artifact(
    config: ArtifactsConfig,
    raw: dict[str, Any] | None,
    ctx: ToolContext,
    filesystem: Callable[[], FileSystem] | None = None,
) -> CallResult:
    """Run one ``tag_artifact`` call: ``{"artifactId", "kind", "name"}``, or an error result.
    ``filesystem``: the agent's root (None: read paths from the workspace)."""
    spec = tag_artifact_spec(config)
    if raw is None:
        return error(f"the arguments for {TAG_ARTIFACT_TOOL} are not a JSON object")
    arguments = schema_arguments(TAG_ARTIFACT_TOOL, spec.input_schema, raw)
    if isinstance(arguments, list):
        return error(f"invalid arguments for {TAG_ARTIFACT_TOOL}: {'; '.join(arguments)}")
    if ctx.artifacts is None:
        return error("artifacts cannot be kept in this run (no session)")
    try:
        content = await _content(arguments, ctx, filesystem)
        artifact_id = await ctx.artifacts.tag(
            arguments["name"], content, kind=arguments["kind"], content_type=arguments.get("contentType")
        )
    except (ValueError, OSError, FileSystemError) as problem:
        return error(str(problem))
    return CallResult({"artifactId": artifact_id, "kind": arguments["kind"], "name": arguments["name"]})
