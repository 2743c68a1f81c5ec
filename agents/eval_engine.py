"""The eval case runner: the ``t`` object, gates, statuses, ``repeat`` and timeouts.

It knows nothing of where turns run: a ``Driver`` starts or continues the case's
session and answers each settled turn's events. The platform's driver
(``sessions_app.evals``) runs real eval sessions on Celery workers; the CLI's
in-process driver (``InProcessDriver``) runs turns in this process with no database.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agents.discovery import AgentSurface
from agents.events import EventType
from agents.sdk import EvalCase, EvalsConfig, SessionInfo, Signal
from agents.sdk.evals import EvalAssertionError, Matcher, Turn, args_match, describe

PASSED, FAILED, ERROR, TIMEOUT, CANCELLED, FLAKY = "passed", "failed", "error", "timeout", "cancelled", "flaky"
PENDING, RUNNING = "pending", "running"
logger = logging.getLogger(__name__)
FINISHED = (PASSED, FAILED, ERROR, TIMEOUT, CANCELLED, FLAKY)
# What one attempt's result keeps of its gates: enough to read, bounded for the run's row.
MAX_GATES = 500
MAX_GATE_MESSAGE = 1000


@dataclass
class SettledTurn:
    """What a driver answers for one turn: its session and that turn's event records."""

    session_id: str
    events: list[dict[str, Any]]


class Driver(Protocol):
    """Runs the turns of one attempt of a case (one session)."""

    async def send(self, message: str, options: dict[str, Any]) -> SettledTurn: ...

    async def stop(self) -> None: ...


def turn_from(settled: SettledTurn, index: int) -> Turn:
    """Build the case's ``Turn`` from a settled turn's events."""
    calls: dict[str, dict[str, Any]] = {}
    message, ok, error = "", False, None
    for event in settled.events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == EventType.ACTIONS_REQUESTED:
            for call in data.get("calls", []):
                calls[call["callId"]] = {
                    "callId": call["callId"],
                    "toolName": call.get("toolName"),
                    "args": call.get("args"),
                    "output": None,
                    "isError": False,
                }
        elif kind == EventType.ACTION_RESULT:
            entry = calls.setdefault(
                data.get("callId", ""),
                {"callId": data.get("callId"), "toolName": data.get("toolName"), "args": None},
            )
            entry["output"], entry["isError"] = data.get("output"), bool(data.get("isError"))
        elif kind == EventType.MESSAGE_COMPLETED:
            message = data.get("text") or message
        elif kind == EventType.TURN_COMPLETED:
            ok = True
            result = data.get("result")
            message = result if isinstance(result, str) else message
        elif kind == EventType.TURN_FAILED:
            ok, error = False, str(data.get("error") or data.get("message") or data or "failed")
    return Turn(
        message=message or "",
        session_id=settled.session_id,
        events=settled.events,
        tool_calls=list(calls.values()),
        ok=ok,
        index=index,
        error=error,
    )


class CaseTest:
    """The ``t`` of one attempt: sends turns through its driver, records gates."""

    def __init__(self, driver: Driver, timeout: float | None = None) -> None:
        self._driver = driver
        self.timeout = timeout  # the attempt's, for a sandboxed test's wall time
        self.turns: list[Turn] = []
        self.assertions: list[dict[str, Any]] = []
        self.signal = Signal()
        self.session_ids: list[str] = []

    @property
    def session_id(self) -> str | None:
        return self.session_ids[0] if self.session_ids else None

    @property
    def reply(self) -> str:
        return self.turns[-1].message if self.turns else ""

    @property
    def events(self) -> list[dict[str, Any]]:
        return [event for turn in self.turns for event in turn.events]

    async def send(self, message: str, **options: Any) -> Turn:
        settled = await self._driver.send(message, options)
        if settled.session_id not in self.session_ids:
            self.session_ids.append(settled.session_id)
        turn = turn_from(settled, len(self.turns))
        self.turns.append(turn)
        return turn

    def record(self, gate: str, ok: bool, message: str) -> bool:
        """Keep a gate's verdict (a sandboxed case's ``t`` tells them here as data: so
        shapes and sizes are forced, and past ``MAX_GATES`` only failures are kept)."""
        ok = ok is True
        if len(self.assertions) < MAX_GATES or not ok:
            entry = {"gate": str(gate)[:40], "ok": ok, "message": str(message)[:MAX_GATE_MESSAGE]}
            if len(self.assertions) < 2 * MAX_GATES:
                self.assertions.append(entry)
        return ok

    def succeeded(self) -> bool:
        """Every turn completed with a non-empty reply (a raising ``commit`` fails the turn)."""
        if not self.turns:
            return self.record("succeeded", False, "no turn was sent")
        for turn in self.turns:
            if not turn.ok:
                return self.record("succeeded", False, f"turn {turn.index} failed: {turn.error}")
            if not turn.message:
                return self.record("succeeded", False, f"turn {turn.index} replied nothing")
        return self.record("succeeded", True, f"{len(self.turns)} turn(s) completed")

    def called(self, tool: str, times: int | None = None, args: dict[str, Any] | None = None) -> bool:
        """The tool was called (``times`` exactly; ``args``: a subset, values may be matchers)."""
        calls = [c for turn in self.turns for c in turn.tool_calls if c.get("toolName") == tool]
        if args is not None:
            calls = [c for c in calls if args_match(args, c.get("args"))]
        what = f"{tool}" + (f" with {args!r}" if args is not None else "")
        if times is None:
            return self.record("called", bool(calls), f"{what} called {len(calls)} time(s)")
        return self.record("called", len(calls) == times, f"{what} called {len(calls)} time(s), expected {times}")

    def check(self, value: Any, matcher: Matcher) -> bool:
        """``matcher(value)``; a matcher that raises counts as false."""
        try:
            ok = bool(matcher(value))
        except Exception as problem:  # noqa: BLE001 - authored matcher
            return self.record("check", False, f"{describe(matcher)} raised {problem!r}")
        shown = repr(value)
        shown = shown if len(shown) <= 200 else shown[:197] + "..."
        return self.record("check", ok, f"{describe(matcher)} on {shown}")


@dataclass
class Attempt:
    status: str
    assertions: list[dict[str, Any]]
    session_ids: list[str]
    error: str | None


async def run_attempt(case: EvalCase, driver: Driver, timeout: float | None) -> Attempt:
    """One run of the case's test; never raises (an authored raise is its status)."""
    t = CaseTest(driver, timeout)
    status, error = PASSED, None
    # Not asyncio.wait_for: a turn that swallows its cancellation would make it return
    # as if the case had finished in time.
    task = asyncio.ensure_future(case.test(t))
    try:
        await asyncio.wait([task], timeout=timeout or None)
        if not task.done():
            t.signal.cancel()
            task.cancel()
            await _quietly(driver.stop())
            await _quietly(asyncio.wait([task], timeout=5))
            return Attempt(TIMEOUT, t.assertions, t.session_ids, f"timed out after {timeout or 0:g}s")
        task.result()
    except asyncio.CancelledError:
        task.cancel()
        t.signal.cancel()
        await _quietly(driver.stop())
        raise
    except (EvalAssertionError, AssertionError) as failed:
        status, error = FAILED, str(failed) or "assertion failed"
    except Exception as crashed:  # noqa: BLE001 - authored code: its own status
        status = ERROR
        error = f"{type(crashed).__name__}: {crashed}"
        tb = traceback.extract_tb(crashed.__traceback__)
        if tb:
            error += f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})"
    if status == PASSED and any(not a["ok"] for a in t.assertions):
        status = FAILED
        error = next(a["message"] for a in t.assertions if not a["ok"])
    return Attempt(status, t.assertions, t.session_ids, error)


async def _quietly(awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        logger.warning("stopping an eval session failed", exc_info=True)


def verdict(statuses: Sequence[str]) -> str:
    """repeat=k: all passed → passed; none → the first attempt's status (failed,
    error, timeout); some → flaky."""
    passed = sum(1 for s in statuses if s == PASSED)
    if passed == len(statuses):
        return PASSED
    if passed == 0:
        return statuses[0] if len(set(statuses)) == 1 else FAILED
    return FLAKY


async def run_case(
    case_id: str, case: EvalCase, config: EvalsConfig | None, new_driver: Callable[[], Driver]
) -> dict[str, Any]:
    """Run a case ``repeat`` times; answers its result (§ result shape)."""
    repeat = max(case.repeat, config.repeat if config and case.repeat == 1 else 1)
    timeout = case.timeout or (config.timeout if config else None)
    started = time.monotonic()
    attempts: list[Attempt] = []
    for _ in range(repeat):
        attempts.append(await run_attempt(case, new_driver(), timeout))
    status = verdict([a.status for a in attempts])
    failing = next((a for a in attempts if a.status != PASSED), None)
    return {
        "id": case_id,
        "status": status,
        "durationMs": int((time.monotonic() - started) * 1000),
        "sessionIds": [sid for a in attempts for sid in a.session_ids],
        "attempts": len(attempts),
        "assertions": [a for attempt in attempts for a in attempt.assertions],
        "error": failing.error if failing else None,
    }


def select_cases(surface: AgentSurface, filter_ids: Iterable[str] = (), tags: Iterable[str] = ()) -> list[str]:
    """Case ids matching: OR within ``filter_ids`` and within ``tags``, AND between them.
    A case's tags include the config's default tags."""
    ids, wanted = set(filter_ids), set(tags)
    config_tags = set(surface.evals_config.tags) if surface.evals_config else set()
    chosen = []
    for case_id, entry in sorted(surface.evals.items()):
        case_tags = set(entry.value.tags) | config_tags
        if ids and case_id not in ids:
            continue
        if wanted and not (case_tags & wanted):
            continue
        chosen.append(case_id)
    return chosen


def datapoints(surface: AgentSurface) -> dict[str, Any]:
    """``GET .../dev/evals``: the cases and the config, camelCase."""
    config = surface.evals_config or EvalsConfig()
    return {
        "datapoints": [
            {"id": case_id, "description": entry.value.description, "tags": list(entry.value.tags)}
            for case_id, entry in sorted(surface.evals.items())
        ],
        "config": {
            "maxConcurrency": config.max_concurrency,
            "tags": list(config.tags),
            "timeout": config.timeout,
            "model": config.model,
            "repeat": config.repeat,
        },
    }


def summarize(cases: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Each case counted once; unfinished ones (pending, running) are ``pending``."""
    summary = {"total": len(cases), **{s: 0 for s in (PASSED, FAILED, ERROR, TIMEOUT, CANCELLED, FLAKY)}, "pending": 0}
    for case in cases:
        summary[case["status"] if case["status"] in FINISHED else "pending"] += 1
    return summary


def pending_result(case_id: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "status": PENDING,
        "durationMs": None,
        "sessionIds": [],
        "attempts": 0,
        "assertions": [],
        "error": None,
    }


async def run_cases(
    surface: AgentSurface,
    case_ids: Sequence[str],
    new_driver: Callable[[str], Driver],
    on_result: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
    max_concurrency: int | None = None,
) -> list[dict[str, Any]]:
    """Run the cases, at most ``max_concurrency`` at once; ``on_result`` as each finishes."""
    config = surface.evals_config
    limit = asyncio.Semaphore(max_concurrency or (config.max_concurrency if config else 4))
    results: dict[str, dict[str, Any]] = {}

    async def one(case_id: str) -> None:
        async with limit:
            result = await run_case(case_id, surface.evals[case_id].value, config, lambda: new_driver(case_id))
        results[case_id] = result
        if on_result is not None:
            maybe = on_result(result)
            if maybe is not None:
                await maybe

    await asyncio.gather(*(one(case_id) for case_id in case_ids))
    return [results[case_id] for case_id in case_ids]


@dataclass
class InProcessDriver:
    """Turns in this process, no database (the CLI's default, like ``agent run``)."""

    surface: AgentSurface
    model: str | None = None
    history: list[Any] = field(default_factory=list)
    session_id: str = ""
    _signal: Signal | None = None

    async def send(self, message: str, options: dict[str, Any]) -> SettledTurn:
        from agents.config import local_mcp_connections, local_secrets, runtime_settings
        from agents.runtime.emitter import MemorySink
        from agents.runtime.turn import TurnRequest, run_turn

        if not self.session_id:
            self.session_id = f"ses_local_{uuid.uuid4().hex[:12]}"
        sink = MemorySink()
        self._signal = Signal()
        session = SessionInfo(id=self.session_id, agent=self.surface.slug, purpose="eval")
        turn_id = f"turn_local_{uuid.uuid4().hex[:12]}"
        with tempfile.TemporaryDirectory(prefix="agent-eval-") as workspace:
            request = TurnRequest(
                session=session,
                turn_id=turn_id,
                message=message,
                history=list(self.history),
                workspace=Path(workspace),
                attachments=dict(options.get("files") or {}),
                signal=self._signal,
                mcp=local_mcp_connections(self.surface),
                load_secrets=local_secrets(self.surface),
            )
            await sink.emit(EventType.MESSAGE_RECEIVED, {"text": message}, turn_id)
            outcome = await run_turn(self.surface, request, sink, runtime_settings(self.surface, "eval"))
        self.history = list(outcome.messages or self.history)
        return SettledTurn(self.session_id, [event.as_record(self.session_id) for event in sink.events])

    async def stop(self) -> None:
        if self._signal is not None:
            self._signal.cancel()
