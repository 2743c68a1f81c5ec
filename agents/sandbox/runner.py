"""The runner: the process inside the sandbox that imports an untrusted tree and runs its code.

Started by ``agents.sandbox.process`` inside bubblewrap as
``python -I -c ... FD FOLDER LIMITS_JSON``: it sets its resource limits before anything of
the tree is imported, says ``ready`` on the socket ``FD``, and then answers ``discover`` (the
tree's surface as data, each function a ref) and ``call`` (one function by ref, with its
arguments and a context whose ``host``, ``artifacts`` and ``send`` are calls back to the
platform) until the socket closes. No Django, no credentials: the platform holds those
and answers each host call through the real host of the call's session.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import json
import logging
import os
import resource
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agents.eval_engine import CaseTest
from agents.sandbox import protocol
from agents.sandbox.protocol import message
from agents.sdk.evals import Turn

# The arguments of a handler the platform may await (plain or async both work there).
AWAITED_FIELDS = frozenset({"events", "render", "commit", "handler", "auth", "test"})
# Exceptions a host call may raise in authored code as themselves; others as HostError.
_BUILTIN_ERRORS: dict[str, type[Exception]] = {
    error.__name__: error for error in (ValueError, KeyError, TypeError, LookupError, PermissionError, RuntimeError)
}
# The limits' names in LIMITS_JSON and the rlimit each one sets.
RLIMITS = {
    "memory_bytes": resource.RLIMIT_AS,
    "processes": resource.RLIMIT_NPROC,
    "file_bytes": resource.RLIMIT_FSIZE,
    "cpu_seconds": resource.RLIMIT_CPU,
}


class HostError(Exception):
    """A host call the platform refused or that failed there; ``str()`` says why."""


def set_limits(limits: Mapping[str, int]) -> None:
    for name, value in limits.items():
        resource.setrlimit(RLIMITS[name], (value, value))


@dataclasses.dataclass
class _Registered:
    kind: str  # "tool" | "route" | "plain"
    target: Any


class Runner:
    def __init__(self, sock: socket.socket, folder: Path) -> None:
        self.sock = sock
        self.folder = folder
        self.functions: list[_Registered] = []
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.waiting: dict[int, concurrent.futures.Future[Any]] = {}
        self.eval_tests: dict[int, RemoteEvalTest] = {}  # call id -> the eval case's t it runs
        self.next_host_id = 0
        self.write_lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None

    # --- the socket ---

    def send(self, frame: dict[str, Any]) -> None:
        with self.write_lock:
            protocol.send(self.sock, frame)

    def read_forever(self) -> None:
        assert self.loop is not None
        try:
            while True:
                frame = protocol.receive(self.sock)
                if frame["type"] == "host_result":
                    waiter = self.waiting.pop(frame["id"], None)
                    if waiter is not None:
                        waiter.set_result(frame)
                else:
                    self.loop.call_soon_threadsafe(self.dispatch, frame)
        except protocol.ProtocolError:
            os._exit(0)  # the platform went away (or spoke nonsense): nothing left to do

    def dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "discover":
            env = frame.get("env") or {}
            os.environ.clear()  # the agent's declared secrets, nothing else
            os.environ.update({str(k): str(v) for k, v in env.items()})
            self.send(message("described", surface=self.discover(frame["slug"], frame["outbound"])))
        elif kind == "call":
            self.tasks[frame["id"]] = asyncio.ensure_future(self.call(frame))
        elif kind == "cancel":
            task = self.tasks.get(frame["id"])
            if task is not None:
                task.cancel()
            t = self.eval_tests.get(frame["id"])
            if t is not None:
                t.signal.cancel()

    # --- discovery ---

    def discover(self, slug: str, outbound: list[str]) -> dict[str, Any]:
        from agents.discovery import discover
        from agents.runtime.outbound import OutboundPolicy

        surface, _loader = discover(self.folder, slug, outbound=OutboundPolicy(allow=tuple(outbound)))
        self.functions.clear()
        return protocol.encode(surface, self.register)

    def register(self, fn: Callable[..., Any], owner: Any, field: str) -> dict[str, Any]:
        from agents.sdk import Route, Tool

        for name, platform_fn in protocol.platform_functions().items():
            if fn is platform_fn:  # the sdk's own handler: the platform runs it, with its host
                return {"$fn": f"{protocol.PLATFORM_FN}:{name}", "async": inspect.iscoroutinefunction(fn)}
        if isinstance(owner, Tool) and field == "fn":
            entry = _Registered("tool", owner)
        elif isinstance(owner, Route) and field == "handler":
            entry = _Registered("route", owner)
        else:
            entry = _Registered("plain", fn)
        self.functions.append(entry)
        awaited = entry.kind != "plain" or field in AWAITED_FIELDS or inspect.iscoroutinefunction(fn)
        return {"$fn": f"{entry.kind}:{len(self.functions) - 1}", "async": awaited}

    # --- calls ---

    async def call(self, frame: dict[str, Any]) -> None:
        call_id = frame["id"]
        reply: dict[str, Any]
        fatal = False
        try:
            args = self.arguments(frame)
            value = await self.run(frame["ref"], args)
            reply = message("result", id=call_id, ok=True, value=protocol.encode(value), mutations=_mutations(args))
        except asyncio.CancelledError:
            reply = message("result", id=call_id, ok=False, error={"type": "Cancelled", "message": "call cancelled"})
        except MemoryError as failure:
            fatal = True  # the heap may be in any state now: answer, then make way for a fresh runner
            reply = message("result", id=call_id, ok=False, error=protocol.error_info(failure))
        except Exception as failure:  # noqa: BLE001  authored code: every failure is the caller's to see
            reply = message("result", id=call_id, ok=False, error=protocol.error_info(failure))
        finally:
            self.tasks.pop(call_id, None)
            self.eval_tests.pop(call_id, None)
        try:
            self.send(reply)
        except (TypeError, ValueError) as unsendable:  # a value JSON cannot carry
            self.send(message("result", id=call_id, ok=False, error=protocol.error_info(unsendable)))
        if fatal:
            os._exit(70)

    def arguments(self, frame: dict[str, Any]) -> list[Any]:
        call_id = frame["id"]
        decoded = protocol.Decoder(eval_test=lambda: RemoteEvalTest(self, call_id))(frame["args"])
        flags = frame.get("host") or {}
        return [self.with_host(value, call_id, flags) for value in decoded]

    def with_host(self, value: Any, call_id: int, flags: Mapping[str, Any]) -> Any:
        """A context decoded from the frame, given the host APIs the platform offers this call."""
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return value
        names = {f.name for f in dataclasses.fields(value)}
        changes: dict[str, Any] = {}
        if "host" in names and flags.get("host"):
            changes["host"] = RemoteHost(self, call_id, flags)
        if "artifacts" in names and flags.get("artifacts"):
            changes["artifacts"] = RemoteArtifacts(self, call_id)
        if "send" in names and flags.get("send"):
            changes["send"] = _remote_send(self, call_id)
        return dataclasses.replace(value, **changes) if changes else value

    async def run(self, ref: str, args: list[Any]) -> Any:
        kind, _, index = ref.partition(":")
        try:
            entry = self.functions[int(index)]
        except (ValueError, IndexError):
            raise LookupError(f"no function {ref!r} in this tree") from None
        if entry.kind != kind:
            raise LookupError(f"no function {ref!r} in this tree")
        if kind == "tool":
            return await self.run_tool(entry.target, *args)
        if kind == "route":
            route = entry.target
            ctx, body = args
            call_args = [ctx] if route.body is None else [ctx, route.body.model_validate(body)]
            return await _awaited(route.handler, call_args)
        return await _awaited(entry.target, args)

    async def run_tool(self, tool: Any, arguments: dict[str, Any], ctx: Any) -> Any:
        from agents.runtime.tool_calls import validate_arguments

        validated = validate_arguments(tool, arguments)
        if not isinstance(validated, dict):
            raise ValueError(validated.output["error"])
        if tool.context_param:
            validated[tool.context_param] = ctx
        if tool.is_async:
            return await tool.fn(**validated)
        return await asyncio.to_thread(tool.fn, **validated)

    # --- host calls ---

    def host_call(self, call_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Ask the platform to run ``method`` for call ``call_id``; blocks until it answers."""
        with self.write_lock:
            self.next_host_id += 1
            host_id = self.next_host_id
        waiter: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.waiting[host_id] = waiter
        frame = message(
            "host",
            id=host_id,
            call=call_id,
            method=method,
            args=[protocol.encode(a) for a in args],
            kwargs={k: protocol.encode(v) for k, v in kwargs.items()},
        )
        self.send(frame)
        return _host_value(waiter.result())

    async def host_call_async(self, call_id: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self.host_call, call_id, method, args, kwargs)


def _host_value(frame: dict[str, Any]) -> Any:
    if frame["ok"]:
        return protocol.Decoder()(frame.get("value"))
    error = frame["error"]
    kind, text = str(error.get("type", "")), str(error.get("message", ""))
    if kind == "SessionRefused":
        from agents.sdk import SessionRefused

        raise SessionRefused(text, code=str(error.get("code", "conflict")), status=int(error.get("status", 409)))
    raise _BUILTIN_ERRORS.get(kind, HostError)(text)


async def _awaited(fn: Callable[..., Any], args: list[Any]) -> Any:
    value = fn(*args)
    return await value if inspect.isawaitable(value) else value


def _mutations(args: list[Any]) -> list[dict[str, Any]]:
    """What a channel events handler changed on its ``channel`` argument, for the platform to keep."""
    from agents.sdk import ChannelSession

    return [
        {"index": index, "state": protocol.encode(arg.state), "newKey": arg.new_key}
        for index, arg in enumerate(args)
        if isinstance(arg, ChannelSession)
    ]


class _Remote:
    def __init__(self, runner: Runner, call_id: int, prefix: str) -> None:
        self._runner, self._call, self._prefix = runner, call_id, prefix

    async def _ask(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await self._runner.host_call_async(self._call, f"{self._prefix}.{method}", *args, **kwargs)

    def _tell(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._runner.host_call(self._call, f"{self._prefix}.{method}", args, kwargs)


class RemoteKV(_Remote):
    async def get(self, key: str, default: Any = None) -> Any:
        return await self._ask("get", key, default)

    async def put(self, key: str, value: Any) -> None:
        await self._ask("put", key, value)

    async def delete(self, key: str) -> None:
        await self._ask("delete", key)

    async def list(self, prefix: str = "") -> list[str]:
        return list(await self._ask("list", prefix))


class RemoteFiles(_Remote):
    async def read(self, path: str, *, scope: str = "session") -> tuple[bytes, str]:
        content, etag = await self._ask("read", path, scope=scope)
        return content, etag

    async def write(self, path: str, content: bytes | str, *, etag: str | None = None, scope: str = "session") -> str:
        return str(await self._ask("write", path, content, etag=etag, scope=scope))

    async def list(self, prefix: str = "/", *, scope: str = "session") -> list[str]:
        return list(await self._ask("list", prefix, scope=scope))

    async def delete(self, path: str, *, scope: str = "session") -> None:
        await self._ask("delete", path, scope=scope)


class RemoteReminders(_Remote):
    async def create(self, message: str, *, at: Any = None, delay: Any = None) -> dict[str, Any]:
        return dict(await self._ask("create", message, at=at, delay=delay))

    async def list(self) -> list[dict[str, Any]]:
        return list(await self._ask("list"))

    async def cancel(self, reminder_id: str) -> bool:
        return bool(await self._ask("cancel", reminder_id))


class RemoteMcp(_Remote):
    async def list_tools(self, connection: str) -> list[dict[str, Any]]:
        return list(await self._ask("list_tools", connection))

    async def call(self, connection: str, tool: str, arguments: Mapping[str, Any] | None = None) -> Any:
        return await self._ask("call", connection, tool, dict(arguments or {}))


class RemoteOtel(_Remote):
    def increment(self, name: str, value: float = 1, attributes: Mapping[str, Any] | None = None) -> None:
        self._tell("increment", name, value, dict(attributes or {}))

    def record(self, name: str, value: float, attributes: Mapping[str, Any] | None = None) -> None:
        self._tell("record", name, value, dict(attributes or {}))

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self._tell("set_attributes", dict(attributes))


class RemoteArtifacts(_Remote):
    def __init__(self, runner: Runner, call_id: int) -> None:
        super().__init__(runner, call_id, "artifacts")

    async def tag(self, name: str, content: bytes | str | None = None, **options: Any) -> str:
        return str(await self._ask("tag", name, content, **options))


class RemoteSlack(_Remote):
    """``ctx.host.slack`` of an agent with a Slack pack: the platform makes the call, with
    the bot token it resolves there (the token never enters the runner)."""

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        return dict(await self._ask("call", method, **params))

    async def post_message(self, channel: str, text: str, thread_ts: str | None = None) -> dict[str, Any]:
        return dict(await self._ask("post_message", channel, text, thread_ts=thread_ts))


class RemoteGitHub(_Remote):
    """``ctx.host.github`` of an agent with a GitHub pack, likewise."""

    async def request(self, method: str, path: str, json: Any = None) -> Any:
        return await self._ask("request", method, path, json)

    async def comment(self, owner_repo: str, number: int, body: str) -> dict[str, Any]:
        return dict(await self._ask("comment", owner_repo, number, body))

    async def edit_comment(self, owner_repo: str, comment_id: int, body: str) -> dict[str, Any]:
        return dict(await self._ask("edit_comment", owner_repo, comment_id, body))

    async def react(self, owner_repo: str, comment_id: int, content: str = "eyes", *, review: bool = False) -> None:
        await self._ask("react", owner_repo, comment_id, content, review=review)

    async def create_check_run(self, owner_repo: str, head_sha: str, **fields: Any) -> dict[str, Any]:
        return dict(await self._ask("create_check_run", owner_repo, head_sha, **fields))

    async def update_check_run(self, owner_repo: str, check_run_id: int, **fields: Any) -> dict[str, Any]:
        return dict(await self._ask("update_check_run", owner_repo, check_run_id, **fields))


class RemoteHost:
    """``ctx.host`` in the sandbox: each call goes to the platform, which runs it through
    the real host of this call's session (the packs' clients too: their tokens stay there)."""

    def __init__(self, runner: Runner, call_id: int, flags: Mapping[str, Any]) -> None:
        self.kv = RemoteKV(runner, call_id, "kv")
        self.files = RemoteFiles(runner, call_id, "files")
        self.otel = RemoteOtel(runner, call_id, "otel")
        self.mcp = RemoteMcp(runner, call_id, "mcp") if flags.get("mcp") else None
        self.reminders = RemoteReminders(runner, call_id, "reminders") if flags.get("reminders") else None
        self.slack = RemoteSlack(runner, call_id, "slack") if flags.get("slack") else None
        self.github = RemoteGitHub(runner, call_id, "github") if flags.get("github") else None


class RemoteEvalTest(CaseTest):
    """An eval case's ``t`` in the sandbox: each turn is sent by the platform's ``t`` (its
    session, its worker) and comes back as the ``Turn``; gates are judged here, where the
    case's matchers live, and each verdict is told to the platform as it is made, so a case
    that later raises or times out keeps the gates it passed."""

    def __init__(self, runner: Runner, call_id: int) -> None:
        # No driver: its sends go to the platform's t.
        super().__init__(driver=None)  # type: ignore[arg-type]
        self._runner, self._call = runner, call_id
        runner.eval_tests[call_id] = self

    async def send(self, message: str, **options: Any) -> Turn:
        turn: Turn = await self._runner.host_call_async(self._call, "eval.send", message, **options)
        if turn.session_id not in self.session_ids:
            self.session_ids.append(turn.session_id)
        self.turns.append(turn)
        return turn

    def record(self, gate: str, ok: bool, message: str) -> bool:
        self._runner.host_call(self._call, "eval.gate", (gate, ok, message), {})
        return super().record(gate, ok, message)


def _remote_send(runner: Runner, call_id: int) -> Callable[..., Any]:
    async def send(message: str, **options: Any) -> dict[str, str]:
        return dict(await runner.host_call_async(call_id, "send", message, **options))

    return send


class _LogToPlatform(logging.Handler):
    def __init__(self, runner: Runner) -> None:
        super().__init__(logging.INFO)
        self.runner = runner

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            self.runner.send(message("log", level=record.levelno, name=record.name[:200], message=text[:8000]))
        except Exception:  # noqa: BLE001  a log line that cannot be sent is dropped, never a failure
            self.handleError(record)


def main(argv: list[str]) -> None:
    fd, folder, limits = int(argv[0]), Path(argv[1]), json.loads(argv[2])
    set_limits(limits)  # before anything of the tree is imported
    os.dup2(2, 1)  # print() goes where stderr goes: the platform's log
    sock = socket.socket(fileno=fd)
    runner = Runner(sock, folder)
    logging.basicConfig(level=logging.INFO, handlers=[_LogToPlatform(runner)])

    async def serve() -> None:
        runner.loop = asyncio.get_running_loop()
        threading.Thread(target=runner.read_forever, name="sandbox-reader", daemon=True).start()
        runner.send(message("ready"))
        await asyncio.Event().wait()  # until the reader exits the process

    asyncio.run(serve())


if __name__ == "__main__":
    main(sys.argv[1:])
