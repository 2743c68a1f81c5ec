"""One conversation that exercises every message kind, and a helper to drain a stream."""

from __future__ import annotations

from agents.runtime.providers.base import (
    Message,
    ModelProvider,
    ModelRequest,
    StreamEvent,
    ToolCall,
    ToolSpec,
)

SYSTEM = "You are a weather assistant."
WEATHER = ToolSpec(
    name="get_weather",
    description="The weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolSpec(name="get_time", description="The local time.", input_schema={"type": "object", "properties": {}})


def conversation(model: str, *, max_output_tokens: int | None = None) -> ModelRequest:
    """User asks, the model called a tool, the tool answered, the user follows up."""
    return ModelRequest(
        model=model,
        system=SYSTEM,
        messages=(
            Message("user", "Weather in Paris?"),
            Message("assistant", "Let me look.", (ToolCall("call_1", "get_weather", {"city": "Paris"}, ""),)),
            Message("tool", '{"sky": "clear"}', call_id="call_1", tool_name="get_weather"),
            Message("user", "And tomorrow?"),
        ),
        tools=(WEATHER, TIME),
        max_output_tokens=max_output_tokens,
    )


def hello(model: str) -> ModelRequest:
    return ModelRequest(model=model, system=SYSTEM, messages=(Message("user", "hi"),))


async def drain(provider: ModelProvider, request: ModelRequest) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]
