"""Chat Completions stream frames, as an OpenAI-compatible server sends them."""

from __future__ import annotations

from typing import Any

from agents.tests.providers.wire import sse

MODEL = "gpt-test"
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


def chunk(delta: dict[str, Any] | None = None, *, finish: str | None = None, usage: Any = None) -> bytes:
    choices = [] if delta is None and finish is None else [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL,
        "choices": choices,
        "usage": usage,
    }
    return sse(data)


def tool_piece(index: int, arguments: str, *, call_id: str | None = None, name: str | None = None) -> bytes:
    piece: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        piece.update(id=call_id, type="function")
        piece["function"]["name"] = name
    return chunk({"tool_calls": [piece]})


DONE = sse("[DONE]")
FINISH = chunk(finish="stop")
