"""The ``test`` model's script protocol served over HTTP in the OpenAI and Anthropic
wire formats, so the same turn tests run through the real provider SDKs.

A request is decoded back into a ``ModelRequest``, the ``test`` model answers it,
and its events are encoded as that provider streams them: text in pieces, each
tool call's JSON arguments split across several chunks, usage at the end.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents.runtime.providers.base import (
    Message,
    ModelError,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    UsageEvent,
)
from agents.runtime.providers.deterministic import DeterministicModel
from agents.tests.providers import anthropic_frames as anthropic
from agents.tests.providers import openai_frames as openai
from agents.tests.providers.wire import Received, Reply, WireServer, failure, stream


def _split(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _openai_request(body: dict[str, Any]) -> ModelRequest:
    system, messages, names = "", [], {}
    for item in body["messages"]:
        role = item["role"]
        if role == "system":
            system = item["content"]
        elif role == "assistant":
            calls = tuple(
                ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                for c in item.get("tool_calls") or []
            )
            names.update({call.call_id: call.name for call in calls})
            messages.append(Message("assistant", item.get("content") or "", calls))
        elif role == "tool":
            messages.append(
                Message("tool", item["content"], call_id=item["tool_call_id"], tool_name=names[item["tool_call_id"]])
            )
        else:
            messages.append(Message("user", item["content"]))
    return ModelRequest(body["model"], system, tuple(messages))


def _anthropic_request(body: dict[str, Any]) -> ModelRequest:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "".join(block.get("text", "") for block in system)
    messages, names = [], {}
    for item in body["messages"]:
        content = item["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if item["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            calls = tuple(ToolCall(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use")
            names.update({call.call_id: call.name for call in calls})
            messages.append(Message("assistant", text, calls))
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                result = block["content"]
                text = result if isinstance(result, str) else "".join(part.get("text", "") for part in result)
                messages.append(
                    Message("tool", text, call_id=block["tool_use_id"], tool_name=names[block["tool_use_id"]])
                )
            elif block["type"] == "text":
                messages.append(Message("user", block["text"]))
    return ModelRequest(body["model"], system, tuple(messages))


async def _answer(request: ModelRequest) -> list[Any]:
    return [event async for event in DeterministicModel().stream(request)]


def _openai_reply(events: list[Any]) -> Reply:
    frames = [openai.chunk({"role": "assistant", "content": ""})]
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    usage = next(e.usage for e in events if isinstance(e, UsageEvent))
    for event in events:
        if isinstance(event, TextDelta):
            frames += [openai.chunk({"content": piece}) for piece in _split(event.text, 2)]
    for index, call in enumerate(calls):
        pieces = _split(json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments)
        frames.append(openai.tool_piece(index, pieces[0], call_id=call.call_id, name=call.name))
        frames += [openai.tool_piece(index, piece) for piece in pieces[1:]]
    frames.append(openai.chunk(finish="tool_calls" if calls else "stop"))
    frames.append(openai.chunk(usage={"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens}))
    return stream(*frames, openai.DONE)


def _anthropic_reply(events: list[Any]) -> Reply:
    usage = next(e.usage for e in events if isinstance(e, UsageEvent))
    frames = [anthropic.message_start(input_tokens=usage.input_tokens)]
    index = 0
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    if text:
        frames += anthropic.text_block(index, *_split(text, 2))
        index += 1
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    for call in calls:
        frames.append(anthropic.tool_start(index, call.call_id, call.name))
        raw = json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments
        frames += [anthropic.json_piece(index, piece) for piece in _split(raw)]
        frames.append(anthropic.block_stop(index))
        index += 1
    frames += anthropic.message_end("tool_use" if calls else "end_turn", output_tokens=usage.output_tokens)
    return stream(*frames)


class ScriptedModelServer(WireServer):
    """Answers each request with what the ``test`` model would say, in the request's wire format."""

    def next_reply(self, request: Received) -> Reply:
        with self._lock:
            self.requests.append(request)
        is_openai = request.path.endswith("/chat/completions")
        decoded = _openai_request(request.body) if is_openai else _anthropic_request(request.body)
        try:
            events = asyncio.run(_answer(decoded))
        except ModelError as error:
            body = {"error": {"message": str(error), "type": "invalid_request_error"}}
            return failure(400, body if is_openai else anthropic.api_error("invalid_request_error", str(error)))
        return _openai_reply(events) if is_openai else _anthropic_reply(events)
