"""Runners pooled per revision (a tree folder and its content), and per session workspace.

A runner's filesystem view is fixed when bwrap starts it, and a session's workspace is
bind-mounted into it read-write: so a runner serves one (revision, workspace) pair, and
calls without a workspace (hooks, channel handlers, schedules, direct calls without a
session) share the revision's workspace-less runners. An idle runner is kept for the next
call (``IDLE_SECONDS``; a session's for ``SESSION_IDLE_SECONDS``: its turn is usually
over) and reaped after; at most ``MAX_RUNNERS`` run in a process, the least recently used
idle one making way for a new one. A runner that died, broke the protocol, was cancelled
or ran past its wall time is never reused.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.sandbox.process import HostHandler, Limits, RunnerProcess, SandboxError

MAX_RUNNERS = 16
IDLE_SECONDS = 300.0
SESSION_IDLE_SECONDS = 60.0
REAP_EVERY_SECONDS = 30.0

_cond = threading.Condition()
_pools: weakref.WeakSet[RevisionPool] = weakref.WeakSet()
_live = 0  # runners started and not yet killed, in every pool of this process
_reaper: threading.Thread | None = None

SecretResolver = Callable[[Sequence[str]], Mapping[str, str]]


class RevisionPool:
    """The runners of one tree revision in this process."""

    def __init__(
        self,
        folder: Path,
        slug: str,
        *,
        outbound: Sequence[str] = (),
        secrets: SecretResolver | None = None,
        tags: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.folder, self.slug = folder, slug
        self.outbound = list(outbound)
        self.resolve = secrets or (lambda names: {})
        self.tags = dict(tags or {})
        self.limits = limits or Limits()
        self.declared: tuple[str, ...] = ()
        self.digest: str | None = None
        self.idle: dict[Path | None, list[RunnerProcess]] = {}
        self.closed = False
        self._first: RunnerProcess | None = None
        with _cond:
            _pools.add(self)
        _start_reaper()

    def secret_values(self) -> dict[str, str]:
        """The declared secrets' values now (a secret set after start counts at the next call)."""
        return {name: value for name, value in self.resolve(self.declared).items() if value}

    # --- discovery ---

    def describe(self) -> dict[str, Any]:
        """Discover the tree in a new runner: the surface as the protocol carries it.

        Raises:
            SandboxError: no runner could be started, or it failed to answer.
        """
        runner = self._reserve_and_start(None, discover_env={})
        self._first = runner
        return self._raw

    def ready(self, declared: Sequence[str]) -> None:
        """After the surface was decoded: the secrets it declares. The discovering runner
        started before they were known, so it stays only when there are none."""
        self.declared = tuple(declared)
        first, self._first = self._first, None
        if first is not None:
            self._release(first, healthy=not self.declared)

    # --- calls ---

    def call(
        self,
        ref: str,
        args: list[Any],
        host: Mapping[str, Any],
        workspace: Path | None,
        deadline: float,
        on_host: HostHandler,
        started: Callable[[RunnerProcess], None] | None = None,
    ) -> dict[str, Any]:
        """Run ``ref`` in a runner of this revision (and ``workspace``): the ``result`` frame.

        Raises:
            SandboxError: no runner, or the runner failed the call (it is replaced).
        """
        runner = self._checkout(workspace, deadline)
        if started is not None:
            started(runner)
        healthy = False
        try:
            frame = runner.call(ref, args, host, deadline, on_host)
            healthy = True
            return frame
        finally:
            self._release(runner, healthy=healthy and not runner.dead and not runner.retired)

    def close(self) -> None:
        """Stop every idle runner; busy ones stop when their call ends."""
        with _cond:
            self.closed = True
            runners = [r for idle in self.idle.values() for r in idle]
            self.idle.clear()
        for runner in runners:
            _kill(runner)

    # --- the pool ---

    def _reserve_and_start(
        self, workspace: Path | None, *, discover_env: Mapping[str, str] | None = None
    ) -> RunnerProcess:
        deadline = time.monotonic() + 30
        global _live
        with _cond:
            while _live >= MAX_RUNNERS:
                if not _evict_one() and not _cond.wait(max(0.0, deadline - time.monotonic())):
                    raise SandboxError(f"all {MAX_RUNNERS} sandbox runners of this process are busy")
            _live += 1
        runner = RunnerProcess(self.folder, workspace, self.limits, tags=self.tags)
        try:
            runner.start()
            env = self.secret_values() if discover_env is None else dict(discover_env)
            raw = runner.discover(self.slug, self.outbound, env)
        except BaseException:
            _kill(runner)
            raise
        digest = hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()
        if self.digest is None:
            self.digest, self._raw = digest, raw
        elif digest != self.digest:
            _kill(runner)
            raise SandboxError("the tree's code differs from what was discovered (it changed on disk)")
        return runner

    def _checkout(self, workspace: Path | None, deadline: float) -> RunnerProcess:
        with _cond:
            if self.closed:
                raise SandboxError("this revision is no longer served")
            idle = self.idle.get(workspace)
            if idle:
                runner = idle.pop()
                if runner.process is not None and runner.process.poll() is None:
                    return runner
                _kill_locked(runner)
        return self._reserve_and_start(workspace)

    def _release(self, runner: RunnerProcess, *, healthy: bool) -> None:
        with _cond:
            if healthy and not self.closed:
                runner.last_used = time.monotonic()
                self.idle.setdefault(runner.workspace, []).append(runner)
                _cond.notify_all()
                return
        _kill(runner)


def _kill(runner: RunnerProcess) -> None:
    with _cond:
        _kill_locked(runner)


def _kill_locked(runner: RunnerProcess) -> None:
    global _live
    if not runner.counted_out:
        runner.counted_out = True
        _live -= 1
        _cond.notify_all()
    runner.kill()


def _evict_one() -> bool:
    """Stop the least recently used idle runner of any pool (under ``_cond``); False if none."""
    candidates = [(r.last_used, pool, r) for pool in list(_pools) for idle in pool.idle.values() for r in idle]
    if not candidates:
        return False
    _, pool, runner = min(candidates, key=lambda c: c[0])
    pool.idle[runner.workspace].remove(runner)
    _kill_locked(runner)
    return True


def reap(now: float | None = None) -> int:
    """Stop runners idle past their time; how many were stopped."""
    now = time.monotonic() if now is None else now
    stopped = 0
    with _cond:
        for pool in list(_pools):
            for workspace, idle in pool.idle.items():
                keep = SESSION_IDLE_SECONDS if workspace is not None else IDLE_SECONDS
                for runner in [r for r in idle if now - r.last_used > keep]:
                    idle.remove(runner)
                    _kill_locked(runner)
                    stopped += 1
    return stopped


def live_runners() -> int:
    with _cond:
        return _live


def _start_reaper() -> None:
    global _reaper
    with _cond:
        if _reaper is not None:
            return
        _reaper = threading.Thread(target=_reap_forever, name="sandbox-reaper", daemon=True)
        _reaper.start()


def _reap_forever() -> None:
    while True:
        time.sleep(REAP_EVERY_SECONDS)
        reap()


@atexit.register
def _stop_all() -> None:
    with _cond:
        for pool in list(_pools):
            for idle in pool.idle.values():
                for runner in idle:
                    runner.kill()
