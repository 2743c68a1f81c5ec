"""``agent run``: one turn of an agent in this process, with no server and no
database; events are kept in memory and the workspace is a temporary folder."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.config import local_mcp_connections, local_secrets, runtime_settings
from agents.discovery import AgentSurface
from agents.events import EventType
from agents.runtime.emitter import MemorySink
from agents.runtime.turn import Decision, TurnOutcome, TurnRequest, pending_calls, resume_turn, run_turn
from agents.sdk import SessionInfo

LOCAL_SESSION = "ses_local"
LOCAL_TURN = "turn_local"


OnRecord = Callable[[dict[str, Any]], None]


class _ShowingSink(MemorySink):
    """Keeps every event, and hands each one's record to ``on_record`` as it is emitted."""

    def __init__(self, on_record: OnRecord | None) -> None:
        super().__init__()
        self.on_record = on_record

    async def emit(self, type: EventType, data: dict[str, Any], turn_id: str | None) -> None:
        await super().emit(type, data, turn_id)
        if self.on_record is not None:
            self.on_record(self.events[-1].as_record(LOCAL_SESSION))


@dataclass
class LocalRun:
    outcome: TurnOutcome
    records: list[dict[str, Any]]


async def _run(
    surface: AgentSurface, message: str, approve: bool | None, dry_run: bool, on_record: OnRecord | None
) -> LocalRun:
    sink = _ShowingSink(on_record)
    session = SessionInfo(id=LOCAL_SESSION, agent=surface.slug, dry_run=dry_run)
    with tempfile.TemporaryDirectory(prefix="agent-run-") as workspace:
        request = TurnRequest(
            session=session,
            turn_id=LOCAL_TURN,
            message=message,
            workspace=Path(workspace),
            mcp=local_mcp_connections(surface),
            load_secrets=local_secrets(surface),
        )
        await sink.emit(EventType.SESSION_STARTED, {"agent": surface.slug}, None)
        await sink.emit(EventType.MESSAGE_RECEIVED, {"text": message}, LOCAL_TURN)
        settings = runtime_settings()
        outcome = await run_turn(surface, request, sink, settings)
        while outcome.status == "parked" and approve is not None and outcome.state is not None:
            decisions = {
                call["callId"]: Decision(approve, "decided on the command line", "cli")
                for call in pending_calls(outcome.state)
            }
            outcome = await resume_turn(surface, request, outcome.state, decisions, sink, settings)
    return LocalRun(outcome, [event.as_record(LOCAL_SESSION) for event in sink.events])


def run_locally(
    surface: AgentSurface,
    message: str,
    *,
    approve: bool | None = None,
    dry_run: bool = False,
    on_record: OnRecord | None = None,
) -> LocalRun:
    """Run one turn; parked approvals are all approved or denied when ``approve`` is set.
    ``on_record`` sees each event record as it is emitted (deltas as they stream)."""
    return asyncio.run(_run(surface, message, approve, dry_run, on_record))
