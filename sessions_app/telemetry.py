"""OpenTelemetry for the sessions of an agent (DESIGN.md §9.9; docs/observability.md).

A turn's spans are built once it has ended, from its events in the log
(``agents.telemetry.spans``): a turn taken up by another worker after its own was lost
still makes one trace, and nothing is held open while a turn runs. The worker calls
``export_turn`` after it has recorded the turn; the metrics of the turn are counted
there too. Everything here returns at once for an agent that exports nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from agent_platform.conf import platform_settings
from agents.config import outbound_policy, runtime_settings
from agents.discovery import AgentSurface
from agents.events import DELTAS, EventType
from agents.models import Agent
from agents.registry import surface_for, surface_for_session
from agents.telemetry import (
    EnvExport,
    Telemetry,
    TurnFacts,
    destination,
    take_attributes,
    telemetry_for,
    turn_telemetry,
)
from sessions_app.models import Event, Session, Turn

logger = logging.getLogger(__name__)

# Events read per query, walking a session's log back from its end to the turn's start.
PAGE = 200
# At most this many pages: a turn whose start is not found in them exports what was read.
MAX_PAGES = 50


def env_export() -> EnvExport:
    return EnvExport(
        platform_settings.OTEL_TRACES_ENDPOINT,
        platform_settings.OTEL_METRICS_ENDPOINT,
        platform_settings.OTEL_SERVICE_NAME,
    )


def agent_telemetry(surface: AgentSurface) -> Telemetry | None:
    """The agent's exporters, or None when it exports nothing (the common case: cheap)."""
    where = destination(surface.otel, env_export())
    return telemetry_for(where, outbound_policy()) if where is not None else None


def include_content(surface: AgentSurface) -> bool:
    return surface.otel is not None and surface.otel.include_content


def count_session(surface: AgentSurface, purpose: str) -> None:
    """``agent_sdk.session.count``: one more session of the agent."""
    telemetry = agent_telemetry(surface)
    if telemetry is not None:
        telemetry.add("agent_sdk.session.count", 1, {"agent_sdk.agent": surface.slug, "agent_sdk.purpose": purpose})


def _turn_events(session_id: str, turn_id: str) -> list[tuple[str, dict[str, Any], Any]]:
    """The turn's events but deltas, oldest first: read back from the log's end, a page
    at a time, until the turn's start (so a turn costs what it logged, not its session's
    whole history)."""
    found: list[tuple[str, dict[str, Any], Any]] = []
    before: int | None = None
    for _ in range(MAX_PAGES):
        rows = Event.objects.filter(session_id=session_id).exclude(type__in=[str(d) for d in DELTAS])
        if before is not None:
            rows = rows.filter(index__lt=before)
        page = list(rows.order_by("-index").values_list("index", "type", "turn_id", "data", "at")[:PAGE])
        started = False
        for _index, type_, of_turn, data, at in page:
            if of_turn != turn_id:
                continue
            found.append((type_, data, at))
            if type_ in (EventType.TURN_STARTED, EventType.MESSAGE_RECEIVED):
                started = True
                break
        if started or len(page) < PAGE:
            break
        before = page[-1][0]
    found.reverse()
    return found


def export_turn(turn: Turn, surface: AgentSurface | None = None) -> None:
    """Send an ended turn's spans and count its metrics, if its agent exports. Observe
    only: a failure is logged, never raised into the turn's recording."""
    session = turn.session
    surface = surface if surface is not None else surface_for_session(session)
    telemetry = agent_telemetry(surface)
    if telemetry is None:
        return
    try:
        _export(turn, surface, telemetry)
    except Exception:  # observe-only, like a hook: the turn is recorded whatever happens here
        logger.exception("the telemetry of turn %s was not exported", turn.pk)


def _export(turn: Turn, surface: AgentSurface, telemetry: Telemetry) -> None:
    session = turn.session
    model = runtime_settings(surface, session.purpose).default_model
    facts = TurnFacts(
        session_id=session.pk,
        agent=surface.slug,
        turn_id=turn.pk,
        channel=session.channel,
        message=turn.message,
        model=surface.config.model or model,
        subagent_models={name: child.config.model or model for name, child in surface.subagents.items()},
        include_content=include_content(surface),
        extra=take_attributes(turn.pk),
    )
    built = turn_telemetry(_turn_events(session.pk, turn.pk), facts, telemetry.resource)
    telemetry.export(built.spans)
    agent = {"agent_sdk.agent": surface.slug}
    for kind, count in built.usage.items():
        if count or kind in ("input", "output"):
            telemetry.add("cursor.token.usage", count, {**agent, "type": kind}, unit="{token}")
    if built.cost is not None:
        telemetry.add("cursor.cost.usage", built.cost, agent, unit="USD")
    for tool, status in built.tool_calls:
        telemetry.add("cursor.tool.calls", 1, {**agent, "cursor.tool.name": tool, "cursor.tool.status": status})
    for name in built.subagents:
        telemetry.add("agent_sdk.subagent.count", 1, {**agent, "agent_sdk.subagent": name})
    telemetry.add("agent_sdk.turn.count", 1, {**agent, "agent_sdk.turn.status": built.status})


def export_direct_call(
    agent: Agent, session: Session | None, call: tuple[str, str, Any], result: Any, window: tuple[datetime, datetime]
) -> None:
    """A tool run with no turn (``POST /v1/tools/:name``): its span under a synthetic
    ``agent_sdk.turn`` (``agent_sdk.turn.synthetic``), and its ``cursor.tool.calls``.
    ``call``: (call id, tool name, arguments); ``result``: the ``CallResult``."""
    surface = surface_for(agent)
    telemetry = agent_telemetry(surface)
    if telemetry is None:
        return
    call_id, tool, arguments = call
    turn_id = direct_turn_id(call_id)
    try:
        facts = TurnFacts(
            session_id=session.pk if session is not None else "",
            agent=surface.slug,
            turn_id=turn_id,
            channel=session.channel if session is not None else "http",
            model=surface.config.model or runtime_settings(surface).default_model,
            include_content=include_content(surface),
            extra={**take_attributes(turn_id), None: {"agent_sdk.turn.synthetic": True}},
        )
        begun, ended = window
        requested = {"calls": [{"callId": call_id, "toolName": tool, "args": arguments}]}
        outcome = {"callId": call_id, "toolName": tool, "output": result.output, "isError": result.is_error}
        records = [
            (str(EventType.ACTIONS_REQUESTED), requested, begun),
            (str(EventType.ACTION_RESULT), outcome, ended),
            (str(EventType.TURN_COMPLETED), {"result": "", "usage": {}, "cost": None}, ended),
        ]
        built = turn_telemetry(records, facts, telemetry.resource)
        telemetry.export(built.spans)
        for name, status in built.tool_calls:
            attributes = {"agent_sdk.agent": surface.slug, "cursor.tool.name": name, "cursor.tool.status": status}
            telemetry.add("cursor.tool.calls", 1, attributes)
    except Exception:  # observe-only
        logger.exception("the telemetry of direct call %s was not exported", call_id)


def direct_turn_id(call_id: str) -> str:
    """The synthetic turn of a direct call (its trace id derives from it)."""
    return f"direct:{call_id}"
