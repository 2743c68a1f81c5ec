"""OpenAIProvider against a local server that speaks Chat Completions over real HTTP."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agents.runtime.providers.base import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelStreamError,
    ModelTimeout,
    ModelUnavailable,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
)
from agents.runtime.providers.gateway import ProviderSettings
from agents.runtime.providers.openai_provider import OpenAIProvider
from agents.tests.providers.openai_frames import DONE, FINISH, MODEL, USAGE, chunk, tool_piece
from agents.tests.providers.samples import SYSTEM, conversation, drain, hello
from agents.tests.providers.wire import WireServer, failure, sse, stream


def provider_for(server: WireServer, **settings: Any) -> OpenAIProvider:
    return OpenAIProvider(ProviderSettings(openai_api_key="sk-test", openai_base_url=f"{server.url}/v1", **settings))


@pytest.mark.asyncio
async def test_text_deltas_arrive_in_order(wire: WireServer) -> None:
    wire.script(
        stream(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo, "}),
            chunk({"content": "world"}),
            FINISH,
            chunk(usage=USAGE),
            DONE,
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo, ", "world"]
    assert isinstance(events[-1], UsageEvent)


@pytest.mark.asyncio
async def test_reasoning_fields_of_compatible_servers_become_reasoning_deltas(wire: WireServer) -> None:
    wire.script(
        stream(
            chunk({"role": "assistant", "reasoning_content": "The user "}),
            chunk({"reasoning": "greets me."}),
            chunk({"content": "Hi!"}),
            FINISH,
            DONE,
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events == [ReasoningDelta("The user "), ReasoningDelta("greets me."), TextDelta("Hi!")]


@pytest.mark.asyncio
async def test_two_tool_calls_with_arguments_split_across_chunks_are_parsed(wire: WireServer) -> None:
    wire.script(
        stream(
            chunk({"role": "assistant", "content": None}),
            tool_piece(0, "", call_id="call_a", name="get_weather"),
            tool_piece(0, '{"ci'),
            tool_piece(0, 'ty": "Pa'),
            tool_piece(1, '{"ci', call_id="call_b", name="get_weather"),
            tool_piece(0, 'ris"}'),
            tool_piece(1, 'ty": "Oslo", "units": ["C"'),
            tool_piece(1, "]}"),
            chunk(finish="tool_calls"),
            DONE,
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events == [
        ToolCallEvent(ToolCall("call_a", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')),
        ToolCallEvent(
            ToolCall("call_b", "get_weather", {"city": "Oslo", "units": ["C"]}, '{"city": "Oslo", "units": ["C"]}')
        ),
    ]


@pytest.mark.asyncio
async def test_invalid_json_arguments_keep_the_raw_text(wire: WireServer) -> None:
    wire.script(
        stream(
            tool_piece(0, '{"city": ', call_id="call_a", name="get_weather"),
            tool_piece(0, "Paris}"),
            tool_piece(1, "[1, 2]", call_id="call_b", name="get_time"),
            chunk(finish="tool_calls"),
            DONE,
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events == [
        ToolCallEvent(ToolCall("call_a", "get_weather", None, '{"city": Paris}')),
        ToolCallEvent(ToolCall("call_b", "get_time", None, "[1, 2]")),  # JSON, but not an object
    ]


@pytest.mark.asyncio
async def test_calls_without_ids_get_distinct_ones(wire: WireServer) -> None:
    piece = {"function": {"name": "get_time", "arguments": "{}"}}
    pieces = [chunk({"tool_calls": [{"index": i, **piece}]}) for i in (0, 1)]
    wire.script(stream(*pieces, chunk(finish="tool_calls"), DONE))
    events = await drain(provider_for(wire), hello(MODEL))
    assert [e.call.call_id for e in events if isinstance(e, ToolCallEvent)] == ["call_0", "call_1"]


@pytest.mark.asyncio
async def test_usage_maps_cached_and_reasoning_tokens(wire: WireServer) -> None:
    usage = {
        **USAGE,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    wire.script(stream(chunk({"content": "ok"}), FINISH, chunk(usage=usage), DONE))
    events = await drain(provider_for(wire), hello(MODEL))
    assert events[-1] == UsageEvent(
        Usage(input_tokens=120, output_tokens=30, cache_read_tokens=100, reasoning_tokens=12)
    )


@pytest.mark.asyncio
async def test_request_carries_system_prompt_conversation_and_tools(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "ok"}), FINISH, DONE))
    await drain(provider_for(wire), conversation(MODEL, max_output_tokens=500))
    [received] = wire.requests
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test"
    body = received.body
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 500
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear"}'},
        {"role": "user", "content": "And tomorrow?"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "description": "The local time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


@pytest.mark.asyncio
async def test_a_request_without_tools_or_limit_sends_neither(wire: WireServer) -> None:
    wire.script(stream(FINISH, DONE))
    await drain(provider_for(wire), hello(MODEL))
    body = wire.requests[0].body
    assert "tools" not in body
    assert "max_completion_tokens" not in body


@pytest.mark.parametrize(
    ("status", "error_type", "fragment"),
    [
        (401, ModelAuthError, "openai: authentication failed (401): Incorrect API key provided"),
        (403, ModelAuthError, "openai: authentication failed (403): Incorrect API key provided"),
        (429, ModelRateLimited, "openai: rate limited (429): Incorrect API key provided"),
        (500, ModelUnavailable, "openai: server error (500): Incorrect API key provided"),
        (503, ModelUnavailable, "openai: server error (503): Incorrect API key provided"),
        (400, ModelError, "openai: request refused (400): Incorrect API key provided"),
    ],
)
@pytest.mark.asyncio
async def test_error_statuses_map_to_model_errors(
    wire: WireServer, status: int, error_type: type[ModelError], fragment: str
) -> None:
    wire.script(failure(status, {"error": {"message": "Incorrect API key provided", "type": "x", "code": None}}))
    with pytest.raises(ModelError) as caught:
        await drain(provider_for(wire), hello(MODEL))
    assert type(caught.value) is error_type
    assert str(caught.value) == fragment
    assert caught.value.retryable is (status in (429, 500, 503))


@pytest.mark.asyncio
async def test_a_stream_that_ends_without_finish_reason_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"}), chunk({"content": "lo"})))
    with pytest.raises(ModelStreamError, match="ended before the model finished"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_a_connection_dropped_mid_stream_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"}), cut=True))
    with pytest.raises(ModelStreamError, match="connection was lost mid-stream"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_garbage_in_the_stream_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"}), sse("{not json"), FINISH, DONE))
    with pytest.raises(ModelStreamError, match="not JSON"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_a_chunk_without_choices_or_usage_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(sse({"id": "x", "object": "chat.completion.chunk"}), FINISH, DONE))
    with pytest.raises(ModelStreamError, match="neither choices nor usage"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_an_error_object_in_the_stream_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"}), sse({"error": {"message": "model crashed"}})))
    with pytest.raises(ModelStreamError, match="the stream reported an error: model crashed"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_a_slow_server_is_a_timeout(wire: WireServer) -> None:
    wire.script(stream(FINISH, DONE))
    wire.replies[0].delay = 1.0
    with pytest.raises(ModelTimeout, match=r"openai: no answer within 0\.2s") as caught:
        await drain(provider_for(wire, timeout=0.2), hello(MODEL))
    assert caught.value.retryable


@pytest.mark.asyncio
async def test_a_stream_that_stalls_is_a_timeout(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"})))
    # The first chunk comes at once, then nothing: a timeout long enough that a loaded
    # machine still answers within it, so that what times out is the stall.
    wire.replies[0].stall = 3.0
    with pytest.raises(ModelTimeout, match=r"openai: the stream stalled for 1s"):
        await drain(provider_for(wire, timeout=1.0), hello(MODEL))


@pytest.mark.asyncio
async def test_a_consumer_may_stop_early(wire: WireServer) -> None:
    wire.script(stream(chunk({"content": "Hel"}), chunk({"content": "lo"}), FINISH, DONE))
    events = provider_for(wire).stream(hello(MODEL))
    assert await anext(events) == TextDelta("Hel")
    await events.aclose()  # closes the response and the client, without warnings


@pytest.mark.asyncio
async def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAIProvider(ProviderSettings(openai_base_url=f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(ModelUnavailable, match="openai: could not reach the server"):
        await drain(provider, hello(MODEL))
