"""Messages API stream events and error bodies, as Anthropic's server sends them."""

from __future__ import annotations

from typing import Any

from agents.tests.providers.wire import sse

MODEL = "claude-test"


def event(kind: str, **data: Any) -> bytes:
    return sse({"type": kind, **data}, event=kind)


def message_start(**usage: int) -> bytes:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
    }
    return event("message_start", message=message)


def text_block(index: int, *pieces: str) -> list[bytes]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(event("content_block_delta", index=index, delta={"type": "text_delta", "text": p}) for p in pieces),
        event("content_block_stop", index=index),
    ]


def tool_start(index: int, call_id: str, name: str) -> bytes:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return event("content_block_start", index=index, content_block=block)


def json_piece(index: int, partial: str) -> bytes:
    return event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": partial})


def block_stop(index: int) -> bytes:
    return event("content_block_stop", index=index)


def message_end(stop_reason: str = "end_turn", **usage: Any) -> list[bytes]:
    return [
        event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": 5, **usage},
        ),
        event("message_stop"),
    ]


PING = event("ping")


def api_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
