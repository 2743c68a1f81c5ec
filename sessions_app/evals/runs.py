"""Eval runs: created by ``POST .../dev/evals/runs``, run by one Celery task (schedules
queue) that drives its cases with asyncio, at most ``max_concurrency`` at once.

One task per run rather than one per case: the concurrency limit is then a semaphore in
one process (no counter in the database to leak when a worker dies), and the run's
lease is one row the task renews. A run whose worker died (lease past) is resumed by
the sweep (its unfinished cases run again) at most ``MAX_RESUMES`` times, then failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import IntegrityError, close_old_connections, connections, transaction
from django.utils import timezone

from agent_platform import rls
from agent_platform.conf import platform_settings
from agent_platform.errors import DomainError
from agent_platform.models import Principal
from agents import eval_engine as engine
from agents.config import default_model
from agents.discovery import AgentSurface
from agents.events import TURN_ENDS
from agents.models import Agent
from agents.registry import surface_for
from agents.sandbox.pool import MAX_RUNNERS
from agents.sandbox.surface import is_sandboxed
from sessions_app import services
from sessions_app.models import (
    Admission,
    EvalRun,
    EvalRunStatus,
    Session,
    SessionMode,
    SessionPurpose,
    TurnStatus,
)
from sessions_app.queues import TaskName, send
from sessions_app.streams import SessionFollower

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
# A case waits for its turn's end on the session's doorbell; should a ring be lost (Redis
# pub/sub is at-most-once), the shared poll finds the end within this many seconds.
FALLBACK_POLL_SECONDS = 1.0
# Finished cases are written to the run at most this often (the progress a client polls).
RECORD_EVERY_SECONDS = 0.25
MAX_RESUMES = 2
ACTIVE = (EvalRunStatus.QUEUED, EvalRunStatus.RUNNING)


def _lease() -> timedelta:
    return timedelta(seconds=platform_settings.EVAL_LEASE_SECONDS)


class NoCaseMatches(DomainError):
    status, code = 404, "no_eval_case"


class EvalRunRunning(DomainError):
    status, code = 409, "eval_run_running"


class EvalRunNotFound(DomainError):
    status, code = 404, "not_found"


class EvalRunNotRunning(DomainError):
    status, code = 409, "eval_run_not_running"


def snapshot(run: EvalRun) -> dict[str, Any]:
    """A run as the routes answer it."""
    cases = [{**engine.pending_result(str(case.get("id", ""))), **case} for case in run.results]
    status = EvalRunStatus.RUNNING if run.status == EvalRunStatus.QUEUED else run.status
    return {
        "runId": run.pk,
        "status": str(status),
        "createdAt": run.created_at.isoformat(),
        "finishedAt": run.ended_at.isoformat() if run.ended_at else None,
        "filterIds": list(run.options.get("filterIds", [])),
        "tags": list(run.options.get("tags", [])),
        "summary": engine.summarize(cases),
        "cases": cases,
        "error": run.error or None,
    }


def session_title(run_id: str, case_id: str) -> str:
    """Eval sessions are found by their run through their title."""
    return f"eval:{run_id}:{case_id}"


def create_run(
    agent: Agent, surface: AgentSurface, principal: Principal, filter_ids: list[str], tags: list[str]
) -> EvalRun:
    """Start a run of the matching cases (queued for a worker).

    Raises:
        NoCaseMatches: nothing matches the filters.
        EvalRunRunning: a run of this agent is active for this tenant.
    """
    case_ids = engine.select_cases(surface, filter_ids, tags)
    if not case_ids:
        raise NoCaseMatches("No eval case matches filterIds and tags.")
    config = surface.evals_config
    run = EvalRun(
        tenant_id=principal.tenant_id,
        agent=agent,
        principal=principal,
        status=EvalRunStatus.RUNNING,
        options={
            "filterIds": filter_ids,
            "tags": tags,
            "maxConcurrency": config.max_concurrency if config else 4,
            "resumes": 0,
        },
        results=[engine.pending_result(case_id) for case_id in case_ids],
        summary={},
        started_at=timezone.now(),
        lease_expires_at=timezone.now() + _lease(),
    )
    try:
        with transaction.atomic():
            run.save(force_insert=True)
            transaction.on_commit(lambda: send(TaskName.RUN_EVALS, run.pk))
    except IntegrityError:
        raise EvalRunRunning("An eval run of this agent is running; cancel it or wait.") from None
    return run


def cancel_run(run: EvalRun) -> EvalRun:
    """Cancel a running run: its unfinished cases become ``cancelled`` and the running
    turns of its sessions are stopped.

    Raises:
        EvalRunNotRunning: the run already finished.
    """
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=run.pk)
        if run.status not in ACTIVE:
            raise EvalRunNotRunning(f"Run {run.pk} is {run.status}, not running.")
        for case in run.results:
            if case["status"] not in engine.FINISHED:
                case["status"], case["error"] = engine.CANCELLED, "run cancelled"
        run.status, run.ended_at = EvalRunStatus.CANCELLED, timezone.now()
        run.summary = engine.summarize(run.results)
        run.save(update_fields=["status", "ended_at", "results", "summary"])
    stop_run_sessions(run.pk)
    return run


def stop_run_sessions(run_id: str) -> None:
    sessions = Session.objects.filter(
        purpose=SessionPurpose.EVAL,
        title__startswith=f"eval:{run_id}:",
        turns__status__in=(TurnStatus.QUEUED, TurnStatus.RUNNING, TurnStatus.PARKED),
    ).distinct()
    for session in sessions:
        services.stop_session(session, drop_queued=True)


def _record(run_id: str, *finished: dict[str, Any]) -> bool:
    """Persist finished cases; False when the run is no longer running (cancelled)."""
    by_id = {result["id"]: result for result in finished}
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=run_id)
        if run.status not in ACTIVE:
            return False
        run.results = [by_id.get(case["id"], case) for case in run.results]
        run.summary = engine.summarize(run.results)
        run.lease_expires_at = timezone.now() + _lease()
        run.save(update_fields=["results", "summary", "lease_expires_at"])
    return True


class _Recorder:
    """Finished cases persisted by one writer, each write taking every case finished since
    the last, and at most one write per ``RECORD_EVERY_SECONDS`` until ``flush``: each
    write rewrites the run's row (every case's result), so twenty cases ending at once
    cost one write, not twenty queued on its lock, each holding a thread the next cases'
    sessions start on."""

    def __init__(self, run_id: str, db: Executor) -> None:
        self.run_id, self.db = run_id, db
        self.waiting: list[dict[str, Any]] = []
        self.writing: asyncio.Task[None] | None = None
        self.flushing = asyncio.Event()

    def add(self, result: dict[str, Any]) -> None:
        self.waiting.append(result)
        if self.writing is None or self.writing.done():
            self.writing = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        while self.waiting:
            batch, self.waiting = self.waiting, []
            await loop.run_in_executor(self.db, _closing, _record, self.run_id, *batch)
            if not self.flushing.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.flushing.wait(), RECORD_EVERY_SECONDS)

    async def flush(self) -> None:
        """Until every case added so far is written (at once, not at the next interval)."""
        self.flushing.set()
        while self.writing is not None and not self.writing.done():
            await asyncio.shield(self.writing)


def _renew(run_id: str) -> bool:
    """Extend the lease; False when the run stopped being active (cancelled)."""
    lease = timezone.now() + _lease()
    return bool(EvalRun.objects.filter(pk=run_id, status__in=ACTIVE).update(lease_expires_at=lease))


def _finish(run_id: str, status: str, error: str = "") -> None:
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=run_id)
        if run.status not in ACTIVE:
            return
        if status == EvalRunStatus.FAILED:
            for case in run.results:
                if case["status"] not in engine.FINISHED:
                    case["status"], case["error"] = engine.ERROR, error
        run.status, run.error, run.ended_at = status, error, timezone.now()
        run.summary = engine.summarize(run.results)
        run.save(update_fields=["status", "error", "ended_at", "results", "summary"])


class PlatformDriver:
    """One attempt's session: started at the first send (chat, purpose eval, owned by
    the run's principal), each turn run by a worker; waits until the turn has ended in
    the log, woken by the session's doorbell like a stream (no connection held while
    it waits)."""

    def __init__(self, run: EvalRun, surface: AgentSurface, case_id: str, db: Executor) -> None:
        self.run, self.surface, self.case_id, self.db = run, surface, case_id, db
        self.session_id: str | None = None

    def _begin(self, message: str, files: dict[str, str] | None) -> tuple[str, str, int]:
        """Start the session or queue a follow-up: its id, the turn's id, and the index
        the turn's events start from."""
        if self.session_id is None:
            session, turn = services.start_session(
                self.run.agent,
                self.surface,
                self.run.principal,  # type: ignore[arg-type]
                message=message,
                mode=SessionMode.CHAT,
                purpose=SessionPurpose.EVAL,
                title=session_title(self.run.pk, self.case_id),
                files=files,
                default_model=default_model(self.surface, SessionPurpose.EVAL),
            )
            self.session_id = session.pk
            return session.pk, turn.pk, 0
        session = Session.objects.get(pk=self.session_id)
        # Enqueue, not preempt: the previous turn's row may still say running for a moment
        # after its end is in the log, and interrupting it would log a second end.
        turn = services.continue_session(session, message=message, files=files, admission=Admission.ENQUEUE)
        return session.pk, turn.pk, session.next_event_index

    async def send(self, message: str, options: dict[str, Any]) -> engine.SettledTurn:
        loop = asyncio.get_running_loop()
        files = options.get("files")
        session_id, turn_id, start = await loop.run_in_executor(self.db, _closing, self._begin, message, files)
        events: list[dict[str, Any]] = []
        async with SessionFollower(session_id, start, poll_interval=FALLBACK_POLL_SECONDS) as follower:
            async for event in follower:
                if event.turn_id == turn_id:
                    events.append(event.as_record())
                    if event.type in TURN_ENDS:
                        break
        return engine.SettledTurn(session_id, events)

    def _stop(self) -> None:
        session = Session.objects.filter(pk=self.session_id).first() if self.session_id else None
        if session is not None:
            services.stop_session(session, drop_queued=True)

    async def stop(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self.db, _closing, self._stop)


def execute_run(run_id: str) -> None:
    """The task's body: run the run's unfinished cases (a resumed run skips finished ones)."""
    close_old_connections()
    run = EvalRun.objects.select_related("agent", "principal").filter(pk=run_id).first()
    if run is None or run.status not in ACTIVE:
        return
    try:
        surface = surface_for(run.agent)
        todo = [c["id"] for c in run.results if c["status"] not in engine.FINISHED and c["id"] in surface.evals]
        missing = [c["id"] for c in run.results if c["status"] not in engine.FINISHED and c["id"] not in surface.evals]
        for case_id in missing:
            _record(
                run_id, {**engine.pending_result(case_id), "status": engine.ERROR, "error": "case no longer exists"}
            )
        limit = int(run.options.get("maxConcurrency") or 4)
        asyncio.run(_run_async(run, surface, todo, limit))
    except Exception as broke:
        logger.exception("eval run %s failed", run_id)
        _finish(run_id, EvalRunStatus.FAILED, f"{type(broke).__name__}: {broke}")
        return
    _finish(run_id, EvalRunStatus.COMPLETED)


def cases_at_once(surface: AgentSurface, todo: list[str], limit: int) -> int:
    """``max_concurrency``, but a deployed agent's cases at most ``MAX_RUNNERS // 2`` at
    once: each case's ``test`` holds a sandbox runner for as long as it runs, and the turns
    it sends need runners of their own (at most ``MAX_RUNNERS`` in a process)."""
    if any(is_sandboxed(surface.evals[case_id].value.test) for case_id in todo):
        return max(1, min(limit, MAX_RUNNERS // 2))
    return max(1, limit)


async def _run_async(run: EvalRun, surface: AgentSurface, todo: list[str], limit: int) -> None:
    loop = asyncio.get_running_loop()
    at_once = cases_at_once(surface, todo, limit)
    # Database work has threads of its own, as many as the turns' database threads: however
    # many cases run at once, the run and the turns together hold at most twice that many
    # connections. A sandboxed case's test holds a thread of the default executor for its
    # whole run (waiting on its runner), so those never keep the database work waiting.
    db = ThreadPoolExecutor(max_workers=platform_settings.WORKER_DB_THREADS, thread_name_prefix=f"eval-db-{run.pk}")
    loop.set_default_executor(ThreadPoolExecutor(max_workers=at_once + 2, thread_name_prefix=f"eval-{run.pk}"))

    recorder = _Recorder(run.pk, db)
    work = asyncio.ensure_future(
        engine.run_cases(
            surface, todo, lambda case_id: PlatformDriver(run, surface, case_id, db), recorder.add, at_once
        )
    )
    try:
        while not work.done():
            await asyncio.wait([work], timeout=HEARTBEAT_SECONDS)
            if not work.done() and not await loop.run_in_executor(db, _closing, _renew, run.pk):
                work.cancel()  # cancelled: each case's driver stops its session
        await recorder.flush()
        if not work.cancelled():
            work.result()
    except asyncio.CancelledError:
        pass
    finally:
        db.shutdown(wait=False, cancel_futures=True)


def _closing(function: Any, *args: Any) -> Any:
    try:
        # A bare executor thread carries no scope: an eval run is the platform's work.
        with rls.platform_scope():
            return function(*args)
    finally:
        connections.close_all()


def sweep_runs() -> int:
    """Beat: a running run whose lease ran out (its worker died) is resumed, or failed
    after ``MAX_RESUMES``; answers how many it touched."""
    touched = 0
    stale = EvalRun.objects.filter(status__in=ACTIVE, lease_expires_at__lt=timezone.now())
    for run_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            run = EvalRun.objects.select_for_update().filter(pk=run_id, status__in=ACTIVE).first()
            if run is None or run.lease_expires_at is None or run.lease_expires_at >= timezone.now():
                continue
            resumes = int(run.options.get("resumes", 0))
            if resumes >= MAX_RESUMES:
                transaction.on_commit(partial(_finish, run_id, EvalRunStatus.FAILED, "worker lost"))
            else:
                run.options = {**run.options, "resumes": resumes + 1}
                run.lease_expires_at = timezone.now() + _lease()
                run.save(update_fields=["options", "lease_expires_at"])
                transaction.on_commit(partial(send, TaskName.RUN_EVALS, run_id))
        touched += 1
    return touched
