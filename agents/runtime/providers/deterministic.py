"""The ``test`` model: deterministic, scriptable, offline (DESIGN.md §4). (The module is
not called test_*.py: pytest would collect it, and readers take it for a test file.)

It reads the last user message line by line:

- ``/call TOOL {json}`` asks for that tool call (several lines, several calls);
- ``/fail MESSAGE`` fails the step with MESSAGE;
- ``/sleep SECONDS`` waits (cancellable);
- ``/stream N`` streams N short deltas;
- ``/subagent ID message`` delegates to subagent ID (a call of its tool);
- ``/system`` answers with the system prompt it was given (for tests of the prompt);
- any other line is echoed back as ``echo: <text>``.

After tool results it answers ``done: TOOL -> <result json>`` for each call.
Usage counts are word counts. It is a test double for the model only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from agents.runtime.providers.base import (
    Message,
    ModelRequest,
    ModelStepFailed,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
)

MAX_STREAM_DELTAS = 1_000_000


def _words(text: str) -> int:
    return len(text.split())


def _input_words(request: ModelRequest) -> int:
    return _words(request.system) + sum(
        _words(message.text) + sum(_words(json.dumps(call.arguments)) for call in message.tool_calls)
        for message in request.messages
    )


def _answer_tool_results(request: ModelRequest) -> str | None:
    """``done: ...`` lines when the conversation ends with tool results, else None."""
    results: list[Message] = []
    for message in reversed(request.messages):
        if message.role != "tool":
            break
        results.append(message)
    if not results:
        return None
    return "\n".join(f"done: {m.tool_name} -> {m.text}" for m in reversed(results))


def _parse_call(rest: str, step: int, position: int) -> ToolCall:
    name, _, raw = rest.strip().partition(" ")
    raw = raw.strip() or "{}"
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        arguments = None
    if arguments is not None and not isinstance(arguments, dict):
        arguments = None
    return ToolCall(call_id=f"call_{step}_{position}", name=name, arguments=arguments, raw_arguments=raw)


class DeterministicModel:
    """``test``: see the module docstring for the script protocol."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        done = _answer_tool_results(request)
        if done is not None:
            yield TextDelta(done)
            yield UsageEvent(Usage(input_tokens=_input_words(request), output_tokens=_words(done)))
            return
        user = next((m for m in reversed(request.messages) if m.role == "user"), None)
        lines = (user.text if user else "").splitlines() or [""]
        step = sum(1 for m in request.messages if m.role == "assistant")
        calls: list[ToolCall] = []
        echoed: list[str] = []
        output_words = 0
        for line in lines:
            command, _, rest = line.strip().partition(" ")
            if command == "/call":
                calls.append(_parse_call(rest, step, len(calls)))
            elif command == "/subagent":
                target, _, message = rest.strip().partition(" ")
                calls.append(ToolCall(f"call_{step}_{len(calls)}", target, {"message": message.strip()}, ""))
            elif command == "/fail":
                raise ModelStepFailed(rest.strip() or "the test model was asked to fail")
            elif command == "/sleep":
                await asyncio.sleep(float(rest.strip() or 0))
            elif command == "/system":
                echoed.append(request.system)
            elif command == "/stream":
                count = min(int(rest.strip() or 0), MAX_STREAM_DELTAS)
                for n in range(count):
                    yield TextDelta(f"t{n} ")
                output_words += count
            else:
                echoed.append(line)
        text_lines = [line for line in echoed if line.strip()]
        if text_lines and not calls:
            reply = "echo: " + "\n".join(text_lines)
            yield TextDelta(reply)
            output_words += _words(reply)
        for call in calls:
            yield ToolCallEvent(call)
            output_words += 1 + _words(call.raw_arguments)
        yield UsageEvent(Usage(input_tokens=_input_words(request), output_tokens=output_words))
