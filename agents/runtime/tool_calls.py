"""Running one tool call: validate the arguments, run the function (in-process or
as a script in the workspace) with a timeout, and serialise what it returns.

Nothing here raises for a tool's own failure: a bad argument, a timeout or an
exception becomes an ``isError`` result the model can read and react to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agents.sdk import Tool, ToolContext
from agents.sdk._tool import tool_arguments

logger = logging.getLogger(__name__)


def needs_approval(tool: Tool, arguments: Mapping[str, Any]) -> bool:
    """Whether a call of ``tool`` with these arguments must wait for a person (in a turn)
    or is refused (called directly). A predicate that raises errs on the side of asking."""
    try:
        return bool(tool.requires_approval(dict(arguments)))
    except Exception:  # authored code: any failure means "ask"
        logger.warning("needs_approval of %s raised; the call is treated as needing approval", tool.name, exc_info=True)
        return True


DEFAULT_TOOL_TIMEOUT = 120.0
MAX_OUTPUT_CHARS = 100_000
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Runs an execution="agent" tool file as a script: JSON arguments on stdin, JSON result on stdout.
_SCRIPT_RUNNER = """
import asyncio, importlib.util, inspect, json, sys
from agents.sdk import Tool
spec = importlib.util.spec_from_file_location("agent_tool", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tool = next(value for value in vars(module).values() if isinstance(value, Tool))
arguments = json.load(sys.stdin)
if tool.context_param:
    arguments[tool.context_param] = None
result = tool.fn(**arguments)
if inspect.isawaitable(result):
    result = asyncio.run(result)
sys.stdout.write(json.dumps(result, default=str))
"""


@dataclass(frozen=True)
class CallResult:
    """What a call produced: the JSON-able output, its text for the model, and flags."""

    output: Any
    is_error: bool = False
    stubbed: bool = False

    @property
    def text(self) -> str:
        return serialize(self.output)


def serialize(value: Any) -> str:
    """JSON for the model; anything JSON cannot express becomes its ``str``.
    Very large outputs are cut, with a note saying so."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) > MAX_OUTPUT_CHARS:
        text = (
            f"{text[:MAX_OUTPUT_CHARS]}\n[output truncated: {len(text)} characters, the first {MAX_OUTPUT_CHARS} shown]"
        )
    return text


def error(message: str) -> CallResult:
    return CallResult({"error": message}, is_error=True)


def validate_arguments(tool: Tool, arguments: dict[str, Any] | None, raw: str = "") -> dict[str, Any] | CallResult:
    """The validated arguments (parsed values), or an error result naming what is wrong."""
    if arguments is None:
        return error(f"the arguments for {tool.name} are not a JSON object: {raw[:200]!r}")
    try:
        validated = tool.input_model.model_validate(arguments)
    except ValidationError as invalid:
        problems = "; ".join(_problem(tool, item) for item in invalid.errors())
        return error(f"invalid arguments for {tool.name}: {problems}")
    return tool_arguments(validated)


def _problem(tool: Tool, item: ErrorDetails) -> str:
    """One validation error as the model should read it: which argument, and what it expects."""
    where = ".".join(str(part) for part in item["loc"]) or "arguments"
    properties: dict[str, Any] = tool.input_schema.get("properties", {})
    if item["type"] == "extra_forbidden":
        return f"{where!r} is not an argument of {tool.name} (it takes {', '.join(properties) or 'no arguments'})"
    prop = properties.get(str(item["loc"][0]), {}) if item["loc"] else {}
    said = [str(prop[key]) for key in ("type", "description") if prop.get(key)]
    expected = f" ({': '.join(said)})" if said else ""
    if item["type"] == "missing":
        return f"{where!r} is missing{expected}"
    return f"{where!r}: {item['msg']}{expected}; got {json.dumps(item['input'], default=str)[:80]}"


_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}
_KINDS = {"string": "a string", "integer": "an integer", "boolean": "true or false"}


def _expected(prop: Mapping[str, Any]) -> str:
    kind = f"one of {', '.join(map(repr, prop['enum']))}" if "enum" in prop else _KINDS[prop["type"]]
    if "minimum" in prop:
        kind += f" >= {prop['minimum']}"
    return f"{kind}: {prop['description']}" if "description" in prop else kind


def _fits(prop: Mapping[str, Any], value: Any) -> bool:
    if isinstance(value, bool) and prop["type"] != "boolean":
        return False  # JSON true is not the integer 1
    if not isinstance(value, _JSON_TYPES[prop["type"]]):
        return False
    if "enum" in prop and value not in prop["enum"]:
        return False
    return "minimum" not in prop or value >= prop["minimum"]


def schema_arguments(name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any] | list[str]:
    """Arguments checked against the platform's own flat input schemas (the file tools, a
    subagent's, ``load_skill``'s: string, integer and boolean properties, ``required``,
    ``enum``, ``minimum``, no others): the arguments to run the tool with (an optional one
    sent as ``null`` counts as not sent), or one line per problem, each naming the argument
    and what it expects, for the model to correct its call."""
    properties: dict[str, Any] = schema["properties"]
    required = schema.get("required", [])
    given = {key: value for key, value in arguments.items() if value is not None or key in required}
    problems = [f"{key!r} is missing ({_expected(properties[key])})" for key in required if key not in given]
    for key, value in given.items():
        if key not in properties:
            problems.append(f"{key!r} is not an argument of {name} (it takes {', '.join(properties)})")
        elif not _fits(properties[key], value):
            problems.append(f"{key!r} must be {_expected(properties[key])}; got {json.dumps(value)[:80]}")
    return problems or given


async def run_server_tool(tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> CallResult:
    """Run a server tool in-process: async functions awaited, plain ones in a thread."""
    kwargs = dict(arguments)
    if tool.context_param:
        kwargs[tool.context_param] = ctx
    timeout = tool.timeout or DEFAULT_TOOL_TIMEOUT
    try:
        if tool.is_async:
            value = await asyncio.wait_for(tool.fn(**kwargs), timeout)
        else:
            value = await asyncio.wait_for(asyncio.to_thread(tool.fn, **kwargs), timeout)
    except TimeoutError:
        ctx.signal.cancel()  # a thread cannot be killed; the tool can stop on ctx.signal
        return error(f"{tool.name} timed out after {timeout:g} s")
    except asyncio.CancelledError:
        ctx.signal.cancel()
        raise
    except Exception as failure:  # noqa: BLE001  a tool's exception is the model's to see
        return error(f"{tool.name} failed: {type(failure).__name__}: {failure}")
    return CallResult(value)


async def run_agent_tool(tool: Tool, arguments: dict[str, Any], script: Path, workspace: Path) -> CallResult:
    """Run an ``execution="agent"`` tool as a script in the session workspace."""
    timeout = tool.timeout or DEFAULT_TOOL_TIMEOUT
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SCRIPT_RUNNER,
        str(script),
        cwd=workspace,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PYTHONPATH": str(PROJECT_ROOT), "PATH": "/usr/bin:/bin", "HOME": str(workspace)},
    )
    try:
        stdout, stderr = await asyncio.wait_for(
            process.communicate(json.dumps(arguments, default=str).encode()), timeout
        )
    except (TimeoutError, asyncio.CancelledError) as stopped:
        process.kill()
        await process.wait()
        if isinstance(stopped, asyncio.CancelledError):
            raise
        return error(f"{tool.name} timed out after {timeout:g} s")
    if process.returncode != 0:
        tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
        return error(f"{tool.name} exited with status {process.returncode}: {' | '.join(tail)}")
    try:
        return CallResult(json.loads(stdout.decode() or "null"))
    except json.JSONDecodeError:
        return CallResult(stdout.decode(errors="replace"))
