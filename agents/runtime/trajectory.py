"""A turn's story in a few fields, from its events: the reply, the tool calls, the
usage. ``agent run`` prints it for its turn, ``agent trajectory`` for a saved NDJSON stream
(what ``agent run --json`` prints)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Summary of event records (``{type, data, ...}``) of one or more turns."""
    calls: dict[str, dict[str, Any]] = {}
    summary: dict[str, Any] = {
        "status": None,
        "reply": "",
        "toolCalls": [],
        "usage": None,
        "cost": None,
        "failure": None,
    }
    for record in records:
        kind, data = record.get("type"), record.get("data") or {}
        if kind == "actions.requested":
            for call in data.get("calls", []):
                entry = {"callId": call["callId"], "toolName": call["toolName"], "args": call.get("args")}
                if data.get("parentCallId"):
                    entry["parentCallId"] = data["parentCallId"]
                calls[call["callId"]] = entry
                summary["toolCalls"].append(entry)
        elif kind == "action.result" and data.get("callId") in calls:
            calls[data["callId"]].update(output=data.get("output"), isError=data.get("isError", False))
        elif kind == "action.approval_requested":
            summary["status"] = "parked"
        elif kind == "message.completed" and not data.get("parentCallId"):
            summary["reply"] = data.get("text", "")
        elif kind == "turn.completed":
            summary.update(status="completed", usage=data.get("usage"), cost=data.get("cost"), failure=None)
        elif kind == "turn.failed":
            summary.update(status="failed", failure=data.get("message"))
    return summary


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"status: {summary['status']}"]
    for call in summary["toolCalls"]:
        marker = " (error)" if call.get("isError") else ""
        nested = f" [in {call['parentCallId']}]" if call.get("parentCallId") else ""
        lines.append(f"tool {call['toolName']}{nested} {call.get('args')} -> {call.get('output')}{marker}")
    if summary["reply"]:
        lines.append(f"reply: {summary['reply']}")
    if summary["failure"]:
        lines.append(f"failure: {summary['failure']}")
    if summary["usage"]:
        usage = summary["usage"]
        cost = summary["cost"]
        lines.append(
            f"usage: {usage.get('inputTokens', 0)} in, {usage.get('outputTokens', 0)} out"
            + (f", ${cost:.6f}" if cost is not None else ", no price for this model")
        )
    return "\n".join(lines)
