"""AnthropicProvider against a local server that speaks the Messages API over real HTTP."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agents.runtime.providers.anthropic_provider import AnthropicProvider
from agents.runtime.providers.base import (
    Message,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelRequest,
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
from agents.tests.providers.anthropic_frames import (
    MODEL,
    PING,
    api_error,
    block_stop,
    event,
    json_piece,
    message_end,
    message_start,
    text_block,
    tool_start,
)
from agents.tests.providers.samples import SYSTEM, WEATHER, conversation, drain, hello
from agents.tests.providers.wire import WireServer, failure, sse, stream


def provider_for(server: WireServer, **settings: Any) -> AnthropicProvider:
    return AnthropicProvider(
        ProviderSettings(anthropic_api_key="sk-ant-test", anthropic_base_url=server.url, **settings)
    )


@pytest.mark.asyncio
async def test_text_deltas_arrive_in_order(wire: WireServer) -> None:
    wire.script(stream(message_start(), PING, *text_block(0, "Hel", "lo, ", "world"), *message_end()))
    events = await drain(provider_for(wire), hello(MODEL))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo, ", "world"]
    assert isinstance(events[-1], UsageEvent)


@pytest.mark.asyncio
async def test_thinking_deltas_become_reasoning_deltas(wire: WireServer) -> None:
    wire.script(
        stream(
            message_start(),
            event("content_block_start", index=0, content_block={"type": "thinking", "thinking": "", "signature": ""}),
            event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "The user "}),
            event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "greets me."}),
            event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "c2ln"}),
            block_stop(0),
            *text_block(1, "Hi!"),
            *message_end(),
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events[:3] == [ReasoningDelta("The user "), ReasoningDelta("greets me."), TextDelta("Hi!")]


@pytest.mark.asyncio
async def test_two_tool_calls_with_input_split_across_deltas_are_parsed(wire: WireServer) -> None:
    wire.script(
        stream(
            message_start(),
            *text_block(0, "Checking both."),
            tool_start(1, "toolu_a", "get_weather"),
            json_piece(1, ""),
            json_piece(1, '{"ci'),
            json_piece(1, 'ty": "Pa'),
            json_piece(1, 'ris"}'),
            block_stop(1),
            tool_start(2, "toolu_b", "get_weather"),
            json_piece(2, '{"city": "Oslo", '),
            json_piece(2, '"units": ["C"]}'),
            block_stop(2),
            tool_start(3, "toolu_c", "get_time"),
            block_stop(3),  # a tool without input streams no JSON
            *message_end("tool_use"),
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events[1:4] == [
        ToolCallEvent(ToolCall("toolu_a", "get_weather", {"city": "Paris"}, '{"city": "Paris"}')),
        ToolCallEvent(
            ToolCall("toolu_b", "get_weather", {"city": "Oslo", "units": ["C"]}, '{"city": "Oslo", "units": ["C"]}')
        ),
        ToolCallEvent(ToolCall("toolu_c", "get_time", {}, "")),
    ]


@pytest.mark.asyncio
async def test_invalid_json_input_keeps_the_raw_text(wire: WireServer) -> None:
    wire.script(
        stream(
            message_start(),
            tool_start(0, "toolu_a", "get_weather"),
            json_piece(0, '{"city": '),
            json_piece(0, "Paris}"),
            block_stop(0),
            *message_end("tool_use"),
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    assert events[0] == ToolCallEvent(ToolCall("toolu_a", "get_weather", None, '{"city": Paris}'))


@pytest.mark.asyncio
async def test_usage_combines_message_start_and_message_delta(wire: WireServer) -> None:
    wire.script(
        stream(
            message_start(input_tokens=100, cache_read_input_tokens=50, cache_creation_input_tokens=20),
            *text_block(0, "ok"),
            *message_end(output_tokens=42, output_tokens_details={"thinking_tokens": 7}),
        )
    )
    events = await drain(provider_for(wire), hello(MODEL))
    # input_tokens counts cache reads too, as OpenAI's prompt_tokens does.
    assert events[-1] == UsageEvent(
        Usage(input_tokens=150, output_tokens=42, cache_read_tokens=50, cache_write_tokens=20, reasoning_tokens=7)
    )


@pytest.mark.asyncio
async def test_request_carries_system_prompt_conversation_and_tools(wire: WireServer) -> None:
    wire.script(stream(message_start(), *text_block(0, "ok"), *message_end()))
    await drain(provider_for(wire), conversation(MODEL))
    [received] = wire.requests
    assert received.path == "/v1/messages"
    assert received.headers["authorization"] == "Bearer sk-ant-test"  # this SDK sends the key as a bearer token
    body = received.body
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["max_tokens"] == 4096
    assert body["system"] == SYSTEM
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": '{"sky": "clear"}', "is_error": False},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
        {"name": "get_time", "description": "The local time.", "input_schema": {"type": "object", "properties": {}}},
    ]


@pytest.mark.asyncio
async def test_consecutive_tool_results_share_one_user_turn_and_keep_is_error(wire: WireServer) -> None:
    calls = (ToolCall("toolu_a", "get_weather", {"city": "Paris"}), ToolCall("toolu_b", "get_weather", None, "{bad"))
    request = ModelRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "Weather in Paris and Oslo?"),
            Message("assistant", "", calls),
            Message("tool", "sunny", call_id="toolu_a", tool_name="get_weather"),
            Message("tool", "arguments are not JSON", call_id="toolu_b", tool_name="get_weather", is_error=True),
        ),
        tools=(WEATHER,),
        max_output_tokens=256,
    )
    wire.script(stream(message_start(), *text_block(0, "ok"), *message_end()))
    await drain(provider_for(wire), request)
    body = wire.requests[0].body
    assert "system" not in body
    assert body["max_tokens"] == 256
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "arguments are not JSON",
                    "is_error": True,
                },
            ],
        },
    ]


@pytest.mark.parametrize(
    ("status", "kind", "error_type", "expected"),
    [
        (401, "authentication_error", ModelAuthError, "anthropic: authentication failed (401): invalid x-api-key"),
        (403, "permission_error", ModelAuthError, "anthropic: authentication failed (403): invalid x-api-key"),
        (429, "rate_limit_error", ModelRateLimited, "anthropic: rate limited (429): invalid x-api-key"),
        (500, "api_error", ModelUnavailable, "anthropic: server error (500): invalid x-api-key"),
        (529, "overloaded_error", ModelUnavailable, "anthropic: server error (529): invalid x-api-key"),
        (400, "invalid_request_error", ModelError, "anthropic: request refused (400): invalid x-api-key"),
    ],
)
@pytest.mark.asyncio
async def test_error_statuses_map_to_model_errors(
    wire: WireServer, status: int, kind: str, error_type: type[ModelError], expected: str
) -> None:
    wire.script(failure(status, api_error(kind, "invalid x-api-key")))
    with pytest.raises(ModelError) as caught:
        await drain(provider_for(wire), hello(MODEL))
    assert type(caught.value) is error_type
    assert str(caught.value) == expected
    assert caught.value.retryable is (status in (429, 500, 529))


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [("overloaded_error", ModelUnavailable), ("invalid_request_error", ModelStreamError)],
)
@pytest.mark.asyncio
async def test_an_error_event_in_the_stream_maps_by_its_type(
    wire: WireServer, kind: str, error_type: type[ModelError]
) -> None:
    wire.script(stream(message_start(), *text_block(0, "Hel"), sse(api_error(kind, "Overloaded"), event="error")))
    with pytest.raises(ModelError) as caught:
        await drain(provider_for(wire), hello(MODEL))
    assert type(caught.value) is error_type
    assert str(caught.value) == f"anthropic: the stream reported {kind}: Overloaded"


@pytest.mark.asyncio
async def test_a_stream_that_ends_without_message_stop_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(message_start(), *text_block(0, "Hel")))
    with pytest.raises(ModelStreamError, match="ended before message_stop"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_a_connection_dropped_mid_stream_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(message_start(), *text_block(0, "Hel"), cut=True))
    with pytest.raises(ModelStreamError, match="connection was lost mid-stream"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_garbage_in_the_stream_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(message_start(), sse("{not json", event="content_block_delta"), *message_end()))
    with pytest.raises(ModelStreamError, match="not JSON"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_input_json_for_a_block_that_is_not_a_tool_use_is_a_stream_error(wire: WireServer) -> None:
    wire.script(stream(message_start(), json_piece(0, "{}"), *message_end()))
    with pytest.raises(ModelStreamError, match="not a tool_use"):
        await drain(provider_for(wire), hello(MODEL))


@pytest.mark.asyncio
async def test_a_slow_server_is_a_timeout(wire: WireServer) -> None:
    wire.script(stream(message_start(), *message_end()))
    wire.replies[0].delay = 1.0
    with pytest.raises(ModelTimeout, match=r"anthropic: no answer within 0\.2s") as caught:
        await drain(provider_for(wire, timeout=0.2), hello(MODEL))
    assert caught.value.retryable


@pytest.mark.asyncio
async def test_a_stream_that_stalls_is_a_timeout(wire: WireServer) -> None:
    wire.script(stream(message_start(), *text_block(0, "Hel")))
    # The first chunk comes at once, then nothing: a timeout long enough that a loaded
    # machine still answers within it, so that what times out is the stall.
    wire.replies[0].stall = 3.0
    with pytest.raises(ModelTimeout, match=r"anthropic: the stream stalled for 1s"):
        await drain(provider_for(wire, timeout=1.0), hello(MODEL))


@pytest.mark.asyncio
async def test_a_consumer_may_stop_early(wire: WireServer) -> None:
    wire.script(stream(message_start(), *text_block(0, "Hel", "lo"), *message_end()))
    events = provider_for(wire).stream(hello(MODEL))
    assert await anext(events) == TextDelta("Hel")
    await events.aclose()  # closes the response and the client, without warnings


@pytest.mark.asyncio
async def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicProvider(ProviderSettings(anthropic_base_url=f"http://127.0.0.1:{port}"))
    with pytest.raises(ModelUnavailable, match="anthropic: could not reach the server"):
        await drain(provider, hello(MODEL))
