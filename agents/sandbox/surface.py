"""The platform's side: an ``AgentSurface`` whose functions run in the sandbox.

The runner describes the tree as data; decoding it here builds the same sdk objects
discovery builds in-process, except that every function is a proxy that runs the call in
a runner of the revision's pool (``agents.sandbox.pool``). So the turn runtime, dispatch,
direct calls, channels and schedules use the surface unchanged. A context argument
crosses as data; its ``host``, ``artifacts`` and ``send`` stay here, and each host call
the runner makes during the call is answered through them (the real host of the call's
session: its tenant and agent checks apply).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import inspect
import keyword
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from agents import sdk
from agents.discovery import AgentSurface, Diagnostic
from agents.discovery import diagnostics as codes
from agents.eval_engine import CaseTest
from agents.runtime.tool_calls import DEFAULT_TOOL_TIMEOUT
from agents.sandbox import protocol
from agents.sandbox.pool import RevisionPool, SecretResolver
from agents.sandbox.process import CANCEL_GRACE_SECONDS, Limits, RunnerProcess, SandboxError, bwrap_path

# The key under which a sandboxed tool's proxy takes its context: not a Python name, so
# no tool parameter can be called that.
CTX_KEY = "sandbox.ctx"
# Context fields that stay on the platform's side.
_LOCAL_FIELDS = frozenset({"host", "artifacts", "send", "signal"})
HOST_METHODS: dict[str, frozenset[str]] = {
    "kv": frozenset({"get", "put", "delete", "list"}),
    "files": frozenset({"read", "write", "list", "delete"}),
    "reminders": frozenset({"create", "list", "cancel"}),
    "mcp": frozenset({"list_tools", "call"}),
    "otel": frozenset({"increment", "record", "set_attributes"}),
    "artifacts": frozenset({"tag"}),
    "slack": frozenset({"call", "post_message"}),
    "github": frozenset({"request", "comment", "edit_comment", "react", "create_check_run", "update_check_run"}),
}
# What the sandboxed ``t`` of an eval case asks of the platform's (agents.sandbox.runner).
EVAL_TEST_METHODS = {"eval.send": "send", "eval.gate": "record"}
_UNSET: Any = object()


class SandboxedCodeError(Exception):
    """An exception raised by authored code in the sandbox; its class is named like the
    original (``ValueError``), its message is the original's."""


_remote_errors: dict[str, type[SandboxedCodeError]] = {}


def remote_error(info: Mapping[str, Any]) -> Exception:
    """The exception to raise here for a failure the runner reported."""
    kind, text = str(info.get("type", "Error")), str(info.get("message", ""))
    if kind == "SessionRefused":
        status = info.get("status", 409)
        return sdk.SessionRefused(text, code=str(info.get("code", "conflict")), status=int(status))
    if kind == "Cancelled":
        return SandboxError(text)
    if not kind.isidentifier() or keyword.iskeyword(kind) or len(kind) > 100:
        kind = "SandboxedCodeError"
    if kind not in _remote_errors:
        _remote_errors[kind] = type(kind, (SandboxedCodeError,), {"__module__": "sandbox"})
    return _remote_errors[kind](text)


# --- discovery -----------------------------------------------------------------------------


class SandboxLoader:
    """What a sandboxed surface holds instead of a ``TreeLoader``: ``unload()`` stops its runners."""

    def __init__(self, pool: RevisionPool | None) -> None:
        self.pool = pool

    def unload(self) -> None:
        if self.pool is not None:
            self.pool.close()


def sandboxed_surface(
    folder: Path,
    slug: str,
    *,
    outbound: Sequence[str] = (),
    secrets: SecretResolver | None = None,
    tags: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
) -> tuple[AgentSurface, SandboxLoader]:
    """The agent in ``folder`` discovered in the sandbox, each of its functions a proxy into
    the runners of its pool. A tree the sandbox cannot start or describe is a surface whose
    only diagnostic is ``agents.E050`` (so it is not served)."""
    if bwrap_path() is None:
        return _failed(
            folder, slug, "bubblewrap (bwrap) is not installed, so this platform does not run tenant code"
        ), SandboxLoader(None)
    pool = RevisionPool(folder, slug, outbound=outbound, secrets=secrets, tags=tags, limits=limits)
    try:
        raw = pool.describe()
        surface = decode_surface(pool, raw)
    except (SandboxError, protocol.ProtocolError) as failed:
        pool.ready(("discovery failed",))  # never reuse that runner
        pool.close()
        return _failed(folder, slug, str(failed)), SandboxLoader(None)
    pool.ready(surface.config.secrets)
    return surface, SandboxLoader(pool)


def validate_in_sandbox(folder: Path, slug: str | None = None) -> list[dict[str, Any]]:
    """The diagnostics of the tree in ``folder``, discovered in the sandbox, as
    ``agent validate --json`` prints them (``Diagnostic.as_dict()``); the runner is stopped after."""
    surface, loader = sandboxed_surface(folder, slug or folder.name)
    try:
        return [d.as_dict() for d in surface.all_diagnostics()]
    finally:
        loader.unload()


def _failed(folder: Path, slug: str, why: str) -> AgentSurface:
    surface = AgentSurface(slug=slug, path=folder)
    surface.diagnostics.append(Diagnostic(codes.SANDBOX_FAILED, "agent", f"the sandbox could not load the tree: {why}"))
    return surface


def decode_surface(pool: RevisionPool, raw: dict[str, Any]) -> AgentSurface:
    """``raw`` (a ``described`` frame's surface) as an ``AgentSurface`` of proxies.

    Raises:
        ProtocolError: ``raw`` is not a surface of this tree.
    """
    decoder = protocol.Decoder(
        functions=lambda obj: _proxy(pool, obj),
        models=_model_class,
        path=_path_check(pool.folder),
        building=_building,
    )
    try:
        surface = decoder(raw)
    except (TypeError, ValueError, KeyError, AttributeError) as bad:
        raise protocol.ProtocolError(f"the runner's description is not a surface: {bad}") from None
    if not isinstance(surface, AgentSurface) or surface.path != pool.folder:
        raise protocol.ProtocolError("the runner described something other than its tree")
    _refuse_stdio(surface)
    return surface


def _path_check(folder: Path) -> Callable[[str], Path]:
    """Paths the runner names must lie in its tree (or the installed packages, for
    extensions): the platform reads seeds and playground files from them."""
    roots = [Path(os.path.realpath(p)) for p in (folder, sys.prefix, sys.base_prefix)]

    def checked(text: str) -> Path:
        real = Path(os.path.realpath(text))
        if not any(real == root or root in real.parents for root in roots):
            raise protocol.ProtocolError(f"the path {text[:200]!r} is outside the tree")
        return Path(text)

    return checked


def _refuse_stdio(surface: AgentSurface) -> None:
    """A stdio MCP connection would start the tenant's command on the platform's side: dropped."""
    for registry in (surface.mcp_connections, surface.host_connections):
        for name, entry in list(registry.items()):
            if entry.value.command is not None:
                del registry[name]
                surface.diagnostics.append(
                    Diagnostic(
                        codes.SANDBOXED_STDIO_MCP, str(entry.path), f"the stdio MCP connection {name!r} is not started"
                    )
                )
    for child in surface.subagents.values():
        _refuse_stdio(child)


def _building(cls: type, fields: dict[str, Any]) -> dict[str, Any]:
    if cls is sdk.Tool:
        fields["input_model"] = _input_model(str(fields.get("name", "tool")), fields.get("input_schema") or {})
        fields["context_param"] = CTX_KEY
        proxy = fields.get("fn")
        if callable(proxy):
            proxy.timeout = fields.get("timeout")
    return fields


def _input_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A model that checks a call's argument names against the schema (missing, unknown);
    the runner validates the values with the tool's own model."""
    from agents.sdk._tool import _field_name

    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for prop, spec in properties.items():
        field_name, alias = _field_name(str(prop))
        default = ... if prop in required else (spec.get("default", _UNSET) if isinstance(spec, dict) else _UNSET)
        fields[field_name] = (Any, Field(default, alias=alias))
    return create_model(f"{name}_input", __config__=ConfigDict(extra="forbid"), **fields)


class _Passthrough(BaseModel):
    """A channel route's body here: any JSON object; the runner validates it with the
    route's own model. Its schema (``/v1/info``) is the original's."""

    model_config = ConfigDict(extra="allow")
    __sandbox_schema__: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(cls.__sandbox_schema__)


def _model_class(obj: dict[str, Any]) -> type[BaseModel]:
    schema = obj.get("$model")
    name = str(obj.get("name", "Body"))
    if not isinstance(schema, dict):
        raise protocol.ProtocolError("$model must hold a schema")
    return type(name if name.isidentifier() else "Body", (_Passthrough,), {"__sandbox_schema__": schema})


# --- calls ---------------------------------------------------------------------------------


def _encode_arg(value: Any) -> Any:
    if isinstance(value, CaseTest):
        return {"$evaltest": 1}
    if isinstance(value, BaseModel):
        return protocol.encode(value.model_dump(mode="json", by_alias=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value) if f.init and f.name not in _LOCAL_FIELDS]
        fields = {name: getattr(value, name) for name in names}
        if "secrets" in fields:  # the declared ones, resolved by the platform for this call
            fields["secrets"] = dict(fields["secrets"] or {})
        return {
            "$dc": f"{type(value).__module__}.{type(value).__qualname__}",
            "f": {name: protocol.encode(item) for name, item in fields.items()},
        }
    return protocol.encode(value)


def _flags(args: Sequence[Any]) -> tuple[dict[str, Any], Any]:
    """What the call's context offers (told to the runner), and the context itself (an
    eval case's ``t`` is the context of its ``test``)."""
    for arg in args:
        if isinstance(arg, CaseTest):
            return {}, arg
        if dataclasses.is_dataclass(arg) and any(hasattr(arg, name) for name in ("host", "send")):
            host = getattr(arg, "host", None)
            flags = {
                "host": host is not None,
                "mcp": getattr(host, "mcp", None) is not None,
                "reminders": getattr(host, "reminders", None) is not None,
                "slack": getattr(host, "slack", None) is not None,
                "github": getattr(host, "github", None) is not None,
                "artifacts": getattr(arg, "artifacts", None) is not None,
                "send": callable(getattr(arg, "send", None)),
            }
            return flags, arg
    return {}, None


class _HostBridge:
    """Answers the runner's host calls for one call, through that call's context; on the
    caller's event loop (and in its context variables) when it has one."""

    def __init__(self, ctx: Any, loop: asyncio.AbstractEventLoop | None) -> None:
        self.ctx, self.loop = ctx, loop
        self.context = contextvars.copy_context()

    def target(self, method: str) -> Callable[..., Any]:
        if isinstance(self.ctx, CaseTest):
            if method not in EVAL_TEST_METHODS:
                raise PermissionError(f"{method!r} is not offered to an eval case")
            return getattr(self.ctx, EVAL_TEST_METHODS[method])
        if method == "send":
            send = getattr(self.ctx, "send", None)
            if not callable(send):
                raise PermissionError("send is not offered to this call")
            return send
        area, _, name = method.partition(".")
        if name not in HOST_METHODS.get(area, ()):
            raise PermissionError(f"{method!r} is not a host call")
        owner = getattr(self.ctx, "artifacts", None) if area == "artifacts" else getattr(self.ctx, "host", None)
        if owner is not None and area != "artifacts":
            owner = getattr(owner, area, None)
        if owner is None:
            raise PermissionError(
                f"ctx.{'artifacts' if area == 'artifacts' else 'host.' + area} is not offered to this call"
            )
        return getattr(owner, name)

    def __call__(self, frame: dict[str, Any]) -> dict[str, Any]:
        try:
            decode = protocol.Decoder(path=_no_paths)
            args, kwargs = decode(frame["args"]), {str(k): decode(v) for k, v in frame["kwargs"].items()}
            value = self.target(frame["method"])(*args, **kwargs)
            if inspect.isawaitable(value):
                value = _wait(value, self.loop, self.context)
            return protocol.message("host_result", id=frame["id"], ok=True, value=protocol.encode(value))
        except Exception as failure:  # noqa: BLE001  the host's refusal is the authored code's to see
            return protocol.message("host_result", id=frame["id"], ok=False, error=protocol.error_info(failure))


def _no_paths(text: str) -> Path:
    raise protocol.ProtocolError("a host call takes no paths")


def _wait(awaitable: Awaitable[Any], loop: asyncio.AbstractEventLoop | None, context: contextvars.Context) -> Any:
    async def run() -> Any:
        return await awaitable

    if loop is None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as once:
            return once.submit(context.run, asyncio.run, run()).result()
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def finished(task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())
        else:
            done.set_result(task.result())

    def start() -> None:  # a task made here runs in the caller's context variables
        asyncio.ensure_future(run()).add_done_callback(finished)

    loop.call_soon_threadsafe(start, context=context)
    return done.result()


def _outcome(frame: dict[str, Any], args: Sequence[Any]) -> Any:
    for change in frame.get("mutations") or ():
        index = change.get("index")
        target = args[index] if isinstance(index, int) and 0 <= index < len(args) else None
        if isinstance(target, sdk.ChannelSession):
            state = protocol.Decoder(path=_no_paths)(change.get("state"))
            if isinstance(state, dict):
                target.state = state
            if isinstance(change.get("newKey"), str) and change["newKey"]:
                target.new_key = change["newKey"]
    if not frame["ok"]:
        raise remote_error(frame["error"])
    return protocol.Decoder(path=_no_paths)(frame.get("value"))


def _proxy(pool: RevisionPool, obj: dict[str, Any]) -> Callable[..., Any]:
    ref = obj["$fn"]
    if not isinstance(ref, str):
        raise protocol.ProtocolError("$fn must be a string")
    kind, _, name = ref.partition(":")
    if kind == protocol.PLATFORM_FN:  # the sdk's own handler, named by the runner: ours runs
        platform_fn = protocol.platform_functions().get(name)
        if platform_fn is None:
            raise protocol.ProtocolError(f"{ref!r} is not a function of the sdk")
        return platform_fn

    def prepare(args: Sequence[Any]) -> tuple[list[Any], dict[str, Any], Path | None, Any]:
        flags, ctx = _flags(args)
        encoded = [_encode_arg(a) for a in args]
        workspace = getattr(ctx, "workspace", None) if isinstance(ctx, sdk.ToolContext) else None
        # A workspace not made yet (instructions rendered before the turn prepares it) is not mounted.
        mounted = Path(workspace) if workspace is not None and Path(workspace).is_dir() else None
        return encoded, flags, mounted, ctx

    def wall(ctx: Any) -> float:
        if kind == "tool":
            return float(getattr(run_tool, "timeout", None) or DEFAULT_TOOL_TIMEOUT) + 1.0
        if isinstance(ctx, CaseTest) and ctx.timeout:  # the case is cancelled at its timeout
            return ctx.timeout + CANCEL_GRACE_SECONDS + 1.0
        return pool.limits.wall_seconds

    async def run_async(args: Sequence[Any]) -> Any:
        loop = asyncio.get_running_loop()
        encoded, flags, workspace, ctx = prepare(args)
        deadline = time.monotonic() + wall(ctx)
        running: list[RunnerProcess] = []
        task = loop.run_in_executor(
            None, pool.call, ref, encoded, flags, workspace, deadline, _HostBridge(ctx, loop), running.append
        )
        try:
            frame = await task
        except asyncio.CancelledError:
            for runner in running:
                runner.cancel()  # the call stops (or its runner is killed) in its own thread
            raise
        return _outcome(frame, args)

    def run_sync(*args: Any) -> Any:
        encoded, flags, workspace, ctx = prepare(args)
        deadline = time.monotonic() + wall(ctx)
        return _outcome(pool.call(ref, encoded, flags, workspace, deadline, _HostBridge(ctx, None)), args)

    async def run_tool(**kwargs: Any) -> Any:
        ctx = kwargs.pop(CTX_KEY, None)
        arguments = {key: value for key, value in kwargs.items() if value is not _UNSET}
        return await run_async([arguments, ctx])

    async def run_handler(*args: Any) -> Any:
        return await run_async(args)

    proxy: Callable[..., Any]
    if kind == "tool":
        proxy = run_tool
    elif obj.get("async"):
        proxy = run_handler
    else:
        proxy = run_sync
    setattr(proxy, "sandboxed", True)  # noqa: B010  read by is_sandboxed and the turn runtime
    return proxy


def is_sandboxed(fn: Any) -> bool:
    """Whether ``fn`` is a proxy that runs in the sandbox (a tool's ``fn``, a hook's handler...)."""
    return bool(getattr(fn, "sandboxed", False))


__all__ = ["SandboxLoader", "is_sandboxed", "remote_error", "sandboxed_surface", "validate_in_sandbox"]
