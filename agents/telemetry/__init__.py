"""OpenTelemetry for agents (DESIGN.md §9.9): a turn's spans rebuilt from its events
(``spans``), and where they and the metrics go (``export``). No Django here; the
session service reads the events and calls in (``sessions_app.telemetry``)."""

from agents.telemetry.export import (
    Destination,
    EnvExport,
    Telemetry,
    checked_attributes,
    destination,
    running_in,
    set_attributes,
    shutdown_all,
    take_attributes,
    telemetry_for,
)
from agents.telemetry.spans import TurnFacts, TurnTelemetry, trace_id_of, turn_telemetry

__all__ = [
    "Destination",
    "EnvExport",
    "Telemetry",
    "TurnFacts",
    "TurnTelemetry",
    "checked_attributes",
    "destination",
    "running_in",
    "set_attributes",
    "shutdown_all",
    "take_attributes",
    "telemetry_for",
    "trace_id_of",
    "turn_telemetry",
]
