"""The conversation as the model sees it, and its JSON form for parked turns."""

from __future__ import annotations

import secrets
from typing import Any

from agents.runtime.providers.base import Message, ToolCall, Usage


def new_call_id() -> str:
    """The platform's id for a tool call: unique in its session (approvals are addressed by it)."""
    return f"call_{secrets.token_hex(8)}"


def call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"callId": call.call_id, "name": call.name, "arguments": call.arguments, "raw": call.raw_arguments}


def call_from_dict(data: dict[str, Any]) -> ToolCall:
    return ToolCall(data["callId"], data["name"], data["arguments"], data.get("raw", ""))


def message_to_dict(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "text": message.text,
        "toolCalls": [call_to_dict(call) for call in message.tool_calls],
        "callId": message.call_id,
        "toolName": message.tool_name,
        "isError": message.is_error,
    }


def message_from_dict(data: dict[str, Any]) -> Message:
    return Message(
        role=data["role"],
        text=data.get("text", ""),
        tool_calls=tuple(call_from_dict(call) for call in data.get("toolCalls", ())),
        call_id=data.get("callId"),
        tool_name=data.get("toolName"),
        is_error=data.get("isError", False),
    )


def usage_from_dict(data: dict[str, int]) -> Usage:
    return Usage(
        data.get("inputTokens", 0),
        data.get("outputTokens", 0),
        data.get("cacheReadTokens", 0),
        data.get("cacheWriteTokens", 0),
        data.get("reasoningTokens", 0),
    )
