"""One runner process: started in bubblewrap, spoken to over a socketpair.

The confinement (``bwrap_command``): bwrap itself starts with an empty environment
(``env={}`` and ``--clearenv``, so even ``/proc/1/environ`` inside shows nothing), every
namespace unshared (no network at all: no route to Postgres, Redis, loopback or the
metadata address), uid/gid 65534, ``--die-with-parent``, ``--new-session``, no further user
namespaces, and a filesystem of: ``/usr`` and the Python runtime read-only, the
platform's ``agents`` package read-only (nothing else of the repository), the tree
read-only, the session workspace read-write when there is one, a private ``/proc``,
``/dev`` and a size-capped tmpfs ``/tmp``. The runner sets its rlimits before it imports
the tree; the wall time of each call is enforced here (the runner is killed).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.sandbox import protocol
from agents.sandbox.protocol import message

logger = logging.getLogger("agents.sandbox")

AGENTS_PACKAGE = Path(__file__).resolve().parents[1]
SANDBOX_TMP = "/tmp"  # noqa: S108  the runner's own tmpfs, not the host's /tmp
START_SECONDS = 20.0  # bwrap, Python and the tree's imports
CANCEL_GRACE_SECONDS = 1.0
_RUNNER_MAIN = "import sys; sys.path.insert(0, sys.argv[1]); from agents.sandbox.runner import main; main(sys.argv[2:])"


@dataclass(frozen=True)
class Limits:
    """What one runner may use. ``wall_seconds`` bounds a call that names no timeout of its own."""

    memory_bytes: int = 1024 * 1024 * 1024
    processes: int = 64  # threads count too
    file_bytes: int = 64 * 1024 * 1024
    cpu_seconds: int = 600  # over the runner's life; past it the runner is replaced
    tmp_bytes: int = 64 * 1024 * 1024
    wall_seconds: float = 60.0

    def rlimits(self) -> dict[str, int]:
        return {
            "memory_bytes": self.memory_bytes,
            "processes": self.processes,
            "file_bytes": self.file_bytes,
            "cpu_seconds": self.cpu_seconds,
        }


class SandboxError(Exception):
    """A sandboxed call that did not finish: the runner crashed, hit a limit, ran past its
    wall time or broke the protocol. The call's result is this error; the runner is gone."""


def bwrap_path() -> str | None:
    """The bubblewrap binary, or None when it is not installed."""
    return shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


def _python_mounts() -> list[Path]:
    """The Python runtime: the interpreter's installation and the virtualenv's packages."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    for root in list(roots):
        if Path(sys.prefix) != root:
            roots.add(Path(sys.prefix))
    # a virtualenv's python is a symlink to the base interpreter; keep only outermost folders
    return sorted(r for r in roots if not any(o != r and o in r.parents for o in roots) and r.exists())


def bwrap_command(bwrap: str, folder: Path, workspace: Path | None, limits: Limits, fd: int) -> list[str]:
    command = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--clearenv",
        # /tmp first: a tree or workspace below /tmp is mounted over it, not hidden by it
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        SANDBOX_TMP,
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        path = Path(link)
        if path.is_symlink():
            command += ["--symlink", str(path.readlink()), link]
        elif path.is_dir():
            command += ["--ro-bind", link, link]
    for root in _python_mounts():
        if not str(root).startswith("/usr/"):
            command += ["--ro-bind", str(root), str(root)]
    command += ["--ro-bind", str(AGENTS_PACKAGE), str(AGENTS_PACKAGE)]
    command += ["--ro-bind", str(folder), str(folder)]
    if workspace is not None:
        command += ["--bind", str(workspace), str(workspace)]
    command += ["--chdir", str(workspace) if workspace is not None else SANDBOX_TMP]
    command += [sys.executable, "-I", "-c", _RUNNER_MAIN, str(AGENTS_PACKAGE.parent)]
    command += [str(fd), str(folder), json.dumps(limits.rlimits())]
    return command


_PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


def pids_cgroup(name: str, processes: int) -> Path | None:
    """A new pids cgroup capping a runner's processes and threads at ``processes``, or None
    when this process may not make one. Linux does not apply RLIMIT_NPROC to a process whose
    real user is root, and bwrap started by root maps the sandbox's uid to root: so there
    the cgroup is what stops a fork bomb."""
    for root in _PIDS_ROOTS:
        if not (root / "pids.max").exists() and not (root / "cgroup.procs").exists():
            continue
        folder = root / "agent-sandbox" / name
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "pids.max").write_text(str(processes))
        except OSError:
            _remove_cgroup(folder)
            continue
        return folder
    return None


def _remove_cgroup(folder: Path | None) -> None:
    if folder is None:
        return
    for _ in range(50):  # the namespace's processes are gone a moment after bwrap
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


# bwrap's --die-with-parent is tied to the thread that started it: start every runner from
# one thread that lives as long as the process.
_spawner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")

HostHandler = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(eq=False)
class RunnerProcess:
    folder: Path
    workspace: Path | None
    limits: Limits
    tags: Mapping[str, Any] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    refs_digest: str = ""
    calls: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # one call at a time
        self._write = threading.Lock()
        self._ids = 0
        self._cancel_by: float | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.cgroup: Path | None = None
        self._drain: threading.Thread | None = None
        self.sock: socket.socket | None = None
        self.dead = False
        self.retired = False  # cancelled: never reused
        self.counted_out = False  # the pool's count of live runners no longer includes it

    # --- life ---

    def start(self) -> None:
        """Start the runner and wait for its ``ready``.

        Raises:
            SandboxError: bwrap is missing, or the runner did not come up.
        """
        bwrap = bwrap_path()
        if bwrap is None:
            raise SandboxError("bubblewrap (bwrap) is not installed: this platform cannot run tenant code")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        command = bwrap_command(bwrap, self.folder, self.workspace, self.limits, theirs.fileno())

        self.cgroup = pids_cgroup(f"{os.getpid()}-{id(self):x}-{time.monotonic_ns()}", self.limits.processes)
        procs = str(self.cgroup / "cgroup.procs") if self.cgroup is not None else None

        def enter_cgroup() -> None:  # in the child, before bwrap runs: all it starts is capped
            if procs is not None:
                with open(procs, "w") as cgroup:
                    cgroup.write(str(os.getpid()))

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                command,
                env={},
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                close_fds=True,
                preexec_fn=enter_cgroup if procs is not None else None,
            )

        try:
            self.process = _spawner.submit(spawn).result()
        finally:
            theirs.close()
        self.sock = ours
        self._drain = threading.Thread(target=self._drain_stderr, name="sandbox-stderr", daemon=True)
        self._drain.start()
        self._receive_until("ready", None, time.monotonic() + START_SECONDS, None)

    def _drain_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        with self.process.stderr as stderr:  # closed at EOF: the runner is gone
            for line in stderr:
                text = line.decode(errors="replace").rstrip()
                if text:
                    logger.warning("sandbox: %s", text[:2000], extra=dict(self.tags))

    def kill(self) -> None:
        self.dead = True
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.sock is not None:
            self.sock.close()
        if self._drain is not None:
            self._drain.join(timeout=1)
        _remove_cgroup(self.cgroup)
        self.cgroup = None

    def exit_status(self) -> int | None:
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return None

    # --- exchanges ---

    def send(self, frame: dict[str, Any]) -> None:
        assert self.sock is not None
        with self._write:
            protocol.send(self.sock, frame)

    def discover(self, slug: str, outbound: list[str], env: Mapping[str, str]) -> dict[str, Any]:
        with self._lock:
            self.send(message("discover", slug=slug, outbound=outbound, env=dict(env)))
            frame = self._receive_until("described", None, time.monotonic() + START_SECONDS, None)
        surface: dict[str, Any] = frame["surface"]
        return surface

    def call(
        self, ref: str, args: list[Any], host: Mapping[str, Any], deadline: float, on_host: HostHandler
    ) -> dict[str, Any]:
        """Run ``ref`` in the runner; host calls it makes meanwhile go to ``on_host``. The
        ``result`` frame.

        Raises:
            SandboxError: the runner died, broke the protocol or passed ``deadline`` (it is killed).
        """
        with self._lock:
            self._ids += 1
            call_id = self._ids
            self.calls += 1
            self._cancel_by = None
            self.send(message("call", id=call_id, ref=ref, args=args, host=dict(host)))
            frame = self._receive_until("result", call_id, deadline, on_host)
        if not frame["ok"] and frame["error"].get("type") == "MemoryError":
            self.retired = True  # it exits after answering: the next call gets a fresh runner
        return frame

    def cancel(self) -> None:
        """Ask the running call to stop; it has ``CANCEL_GRACE_SECONDS``, then the runner is killed."""
        self.retired = True
        self._cancel_by = time.monotonic() + CANCEL_GRACE_SECONDS
        try:
            self.send(message("cancel", id=self._ids))
        except OSError:
            pass

    def _receive_until(
        self, kind: str, call_id: int | None, deadline: float, on_host: HostHandler | None
    ) -> dict[str, Any]:
        assert self.sock is not None
        try:
            while True:
                limit = min(deadline, self._cancel_by or deadline)
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self.sock.settimeout(remaining)
                frame = protocol.receive(self.sock)
                if frame["type"] == kind and frame.get("id") == call_id:
                    return frame
                if frame["type"] == "log":
                    level = frame["level"] if frame["level"] in (10, 20, 30, 40, 50) else logging.INFO
                    logger.log(level, "%s: %s", frame["name"], frame["message"], extra=dict(self.tags))
                elif frame["type"] == "host" and on_host is not None and frame["call"] == call_id:
                    self.send(on_host(frame))
                else:
                    raise protocol.ProtocolError(f"unexpected {frame['type']!r} frame")
        except TimeoutError:
            self.kill()
            raise SandboxError("the sandboxed call ran past its wall time; its runner was stopped") from None
        except (protocol.PeerGone, ConnectionResetError, BrokenPipeError):
            self.kill()
            status = self.exit_status()
            raise SandboxError(f"the sandbox runner exited ({_status(status)})") from None
        except (protocol.ProtocolError, OSError) as broken:
            self.kill()
            raise SandboxError(f"the sandbox runner broke the protocol: {broken}") from None


def _status(status: int | None) -> str:
    if status is None:
        return "status unknown"
    if status < 0:
        return f"killed by signal {-status}"
    if 128 < status <= 128 + 64:
        # bwrap's own exit when the runner inside was killed by a signal (it exits before
        # the kill that follows reaches it): the same end, told the same way.
        return f"killed by signal {status - 128}"
    if status == 70:
        return "out of memory"
    return f"status {status}"
