"""The runner protocol: length-prefixed JSON frames over one local socket, and the codec
that carries sdk objects across it as data.

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON: one object with
``version`` (``VERSION``), ``type`` and the fields its type needs (``MESSAGES``). Both sides
check every frame they read (``check``); a frame that fails is a protocol error and the
platform ends that runner.

Platform → runner: ``discover``; ``call {id, ref, args, ctx?}``; ``cancel {id}``;
``host_result {id, ok, value | error}``.
Runner → platform: ``ready``; ``described {surface}``; ``result {id, ok, value | error,
mutations?}``; ``host {id, call, method, args, kwargs}``; ``log {level, name, message}``.

Values (``encode``/``decode``): JSON scalars, lists and str-keyed dicts as themselves inside
``{"$d": ...}``; tuples, bytes, paths, datetimes, timedeltas, enums and the sdk's
dataclasses tagged. A function becomes ``{"$fn": ref, ...}`` and the platform side turns it
into a proxy that calls the runner. An eval case's ``t`` becomes ``{"$evaltest": 1}``, and
the runner builds a ``t`` whose sends and gates are host calls (``eval.send``,
``eval.gate``). Decoding builds only the dataclasses of ``DATA_CLASSES``: a runner cannot
make the platform build anything else.

No Django here: the runner imports this module.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import json
import socket
import struct
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

VERSION = 1
MAX_FRAME_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """A frame that is not what the protocol allows (or the peer went away mid-frame)."""


class PeerGone(ProtocolError):
    """The other end closed the socket (the runner exited or was killed)."""


# type -> {field: allowed JSON types}; every message also has "version" and "type".
_ID = (int,)
MESSAGES: dict[str, dict[str, tuple[type, ...]]] = {
    "ready": {},
    "discover": {"slug": (str,), "outbound": (list,)},
    "described": {"surface": (dict,)},
    "call": {"id": _ID, "ref": (str,), "args": (list,)},
    "cancel": {"id": _ID},
    "result": {"id": _ID, "ok": (bool,)},
    "host": {"id": _ID, "call": _ID, "method": (str,), "args": (list,), "kwargs": (dict,)},
    "host_result": {"id": _ID, "ok": (bool,)},
    "log": {"level": (int,), "name": (str,), "message": (str,)},
}


def check(message: Any) -> dict[str, Any]:
    """``message`` if it is a well-formed frame of this protocol version.

    Raises:
        ProtocolError: naming what is wrong.
    """
    if not isinstance(message, dict):
        raise ProtocolError(f"a frame must be a JSON object, not {type(message).__name__}")
    if message.get("version") != VERSION:
        raise ProtocolError(f"protocol version {message.get('version')!r} is not {VERSION}")
    kind = message.get("type")
    fields = MESSAGES.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise ProtocolError(f"unknown message type {kind!r}")
    for name, types in fields.items():
        value = message.get(name)
        if not isinstance(value, types) or (types == _ID and isinstance(value, bool)):
            raise ProtocolError(f"{kind}.{name} must be {' or '.join(t.__name__ for t in types)}, not {value!r:.80}")
    if kind in ("result", "host_result") and not message["ok"] and not isinstance(message.get("error"), dict):
        raise ProtocolError(f"{kind} without ok needs an error object")
    return message


def message(kind: str, **fields: Any) -> dict[str, Any]:
    return {"version": VERSION, "type": kind, **fields}


def send(sock: socket.socket, frame: Mapping[str, Any]) -> None:
    data = json.dumps(frame, separators=(",", ":"), allow_nan=False).encode()
    if len(data) > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {len(data)} bytes is over the {MAX_FRAME_BYTES} byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise PeerGone("the other end closed the socket")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict[str, Any]:
    """The next frame, checked.

    Raises:
        PeerGone: the socket closed. ProtocolError: a bad frame.
        TimeoutError: the socket's timeout passed first.
    """
    (size,) = _HEADER.unpack(_read_exactly(sock, _HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {size} bytes is over the {MAX_FRAME_BYTES} byte limit")
    try:
        return check(json.loads(_read_exactly(sock, size)))
    except (UnicodeDecodeError, json.JSONDecodeError) as bad:
        raise ProtocolError(f"a frame is not JSON: {bad}") from None


def error_info(failure: BaseException) -> dict[str, Any]:
    """An exception as the protocol carries it: ``{"type", "message"}`` (and a refusal's code)."""
    info: dict[str, Any] = {"type": type(failure).__name__, "message": str(failure)[:4000]}
    for extra in ("code", "status"):
        value = getattr(failure, extra, None)
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            info[extra] = value
    return info


# --- values ----------------------------------------------------------------------------------


def _data_classes() -> dict[str, type]:
    """The dataclasses a frame may name, by ``module.Name``: the sdk's and discovery's own."""
    from agents import sdk
    from agents.discovery import diagnostics, surface
    from agents.sdk import _context, _definitions, _extensions, _fs, _tool, evals

    found: dict[str, type] = {}
    for module in (sdk, _context, _definitions, _extensions, _fs, _tool, evals, surface, diagnostics):
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


_CLASSES: dict[str, type] | None = None


def data_classes() -> dict[str, type]:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _data_classes()
    return _CLASSES


def _enums() -> dict[str, type[enum.Enum]]:
    from agents.discovery.diagnostics import Severity

    return {"Severity": Severity}


# The ref kind of a function the runner names rather than runs (``platform_functions``).
PLATFORM_FN = "sdk"


@functools.cache
def platform_functions() -> dict[str, Callable[..., Any]]:
    """The sdk's own handlers by name: the packs' default ``events`` handlers, which hand
    each event to the platform's Slack or GitHub client. They are the platform's code, not
    the tenant's, and need the platform's host; so a sandboxed surface names them
    (``{"$fn": "sdk:<name>"}``) and the platform calls its own copy."""
    from agents.sdk import _github_pack, _slack_pack

    return {
        "slack.post_reply": _slack_pack.post_reply,
        "slack.post_failure": _slack_pack.post_failure,
        "github.track": _github_pack._track,
    }


# encode(fn, owner, field) -> the "$fn" object for a function met in ``owner.field``.
FunctionEncoder = Callable[[Callable[..., Any], Any, str], dict[str, Any]]


def encode(value: Any, functions: FunctionEncoder | None = None, *, _owner: Any = None, _field: str = "") -> Any:
    """``value`` as JSON data (see the module docstring); functions through ``functions``
    (None: a function is an error)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, enum.Enum):
        return {"$enum": type(value).__name__, "v": value.value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Path):
        return {"$path": str(value)}
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$td": value.total_seconds()}
    if isinstance(value, tuple):
        return {"$tu": [encode(item, functions) for item in value]}
    if isinstance(value, (list, set, frozenset)):
        return [encode(item, functions) for item in value]
    if isinstance(value, Mapping):
        return {"$d": {str(key): encode(item, functions, _owner=value, _field=_field) for key, item in value.items()}}
    if isinstance(value, type):
        from pydantic import BaseModel

        if issubclass(value, BaseModel):
            return {"$model": value.model_json_schema(), "name": value.__name__}
        return {"$opaque": repr(value)}
    if dataclasses.is_dataclass(value):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        fields = {
            f.name: encode(getattr(value, f.name), functions, _owner=value, _field=f.name)
            for f in dataclasses.fields(value)
            if f.init
        }
        return {"$dc": name, "f": fields}
    if callable(value):
        if functions is None:
            raise TypeError(f"cannot send the function {value!r} here")
        return functions(value, _owner, _field)
    return {"$opaque": repr(value)[:200]}


# decode hooks: functions(obj, owner_class_name, field) -> a proxy; models(obj) -> a class;
# path(str) -> Path (may refuse); classes: what may be built.
@dataclasses.dataclass
class Decoder:
    functions: Callable[[dict[str, Any]], Any] | None = None
    models: Callable[[dict[str, Any]], Any] | None = None
    path: Callable[[str], Path] = Path
    classes: Mapping[str, type] = dataclasses.field(default_factory=data_classes)
    building: Callable[[type, dict[str, Any]], dict[str, Any]] | None = None
    eval_test: Callable[[], Any] | None = None

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1 and "$d" in value:
            inner = value["$d"]
            if not isinstance(inner, dict):
                raise ProtocolError("$d must hold an object")
            return {key: self(item) for key, item in inner.items()}
        if "$tu" in value:
            return tuple(self(item) for item in _list(value["$tu"]))
        if "$b" in value:
            return base64.b64decode(_str(value["$b"]), validate=True)
        if "$path" in value:
            return self.path(_str(value["$path"]))
        if "$dt" in value:
            return datetime.fromisoformat(_str(value["$dt"]))
        if "$td" in value:
            return timedelta(seconds=float(value["$td"]))
        if "$enum" in value:
            enum_type = _enums().get(_str(value["$enum"]))
            if enum_type is None:
                raise ProtocolError(f"unknown enum {value['$enum']!r}")
            return enum_type(value["v"])
        if "$opaque" in value:
            return _str(value["$opaque"])
        if "$fn" in value:
            if self.functions is None:
                raise ProtocolError("a function is not allowed here")
            return self.functions(value)
        if "$evaltest" in value:
            if self.eval_test is None:
                raise ProtocolError("an eval case's t is not allowed here")
            return self.eval_test()
        if "$model" in value:
            if self.models is None:
                raise ProtocolError("a model is not allowed here")
            return self.models(value)
        if "$dc" in value:
            cls = self.classes.get(_str(value["$dc"]))
            fields = value.get("f")
            if cls is None or not isinstance(fields, dict):
                raise ProtocolError(f"{value['$dc']!r} is not a class the protocol may build")
            allowed = {f.name for f in dataclasses.fields(cls) if f.init}
            if not fields.keys() <= allowed:
                raise ProtocolError(f"{cls.__name__} has no fields {sorted(fields.keys() - allowed)!r}")
            built = {name: self(item) for name, item in fields.items()}
            if self.building is not None:
                built = self.building(cls, built)
            try:
                return cls(**built)
            except (TypeError, ValueError) as bad:
                raise ProtocolError(f"cannot build {cls.__name__}: {bad}") from None
        raise ProtocolError(f"an untagged object {sorted(value)[:5]!r}")


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ProtocolError("expected a list")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ProtocolError("expected a string")
    return value
