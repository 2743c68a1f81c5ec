"""Anthropic's Messages API as a ``ModelProvider``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2

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
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
    UsageEvent,
    error_cause,
    parse_tool_call,
    status_error,
)

if TYPE_CHECKING:
    from anthropic.types import RawMessageStreamEvent

    from agents.runtime.providers.base import ProviderSettings

NAME = "anthropic"
# Anthropic requires max_tokens; this is the answer budget when the request sets none.
DEFAULT_MAX_TOKENS = 4096


class AnthropicProvider:
    """Streams one step from ``/v1/messages``.

    Example::

        provider = AnthropicProvider(ProviderSettings(anthropic_api_key="sk-ant-..."))
        async for event in provider.stream(ModelRequest("claude-sonnet-4-5", "Be brief.", (Message("user", "hi"),))):
            ...

    ``Usage.input_tokens`` counts cache reads too (as OpenAI's ``prompt_tokens``
    does), while cache writes, billed at their own rate, are only in
    ``cache_write_tokens``.

    Raises:
        ModelAuthError: 401 or 403.
        ModelRateLimited: 429, or a ``rate_limit_error`` event in the stream.
        ModelTimeout: the request or the stream timed out.
        ModelUnavailable: 5xx (529 overloaded included), an ``overloaded_error`` or
            ``api_error`` event in the stream, or the server could not be reached.
        ModelStreamError: the stream was malformed, reported another error or ended early.
        ModelError: any other 4xx, with the status and the provider's message.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def _client(self) -> anthropic.AsyncAnthropic:
        # A client per step: its connection pool belongs to the running event loop,
        # and a worker may run each turn in a loop of its own.
        return anthropic.AsyncAnthropic(
            api_key=self.settings.anthropic_api_key or "unset",
            base_url=self.settings.anthropic_base_url or None,
            max_retries=0,  # the gateway retries, with its own budget
            timeout=self.settings.timeout,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async with self._client() as client:
            try:
                events = await client.messages.create(
                    model=request.model,
                    max_tokens=request.max_output_tokens or DEFAULT_MAX_TOKENS,
                    system=request.system or anthropic.omit,
                    messages=anthropic_messages(request.messages),
                    tools=anthropic_tools(request) or anthropic.omit,
                    stream=True,
                )
            except anthropic.AnthropicError as error:
                raise model_error(error, self.settings.timeout) from error
            step = _Step()
            async with events:
                try:
                    async for event in events:
                        for out in step.read(event):
                            yield out
                # The SDK does not wrap transport errors raised while the body streams.
                except (httpx2.TimeoutException, anthropic.APITimeoutError) as error:
                    raise ModelTimeout(f"{NAME}: the stream stalled for {self.settings.timeout:g}s") from error
                except (httpx2.TransportError, anthropic.APIConnectionError) as error:
                    raise ModelStreamError(f"{NAME}: the connection was lost mid-stream: {error}") from error
                except anthropic.AnthropicError as error:
                    raise model_error(error, self.settings.timeout) from error
                except json.JSONDecodeError as error:
                    raise ModelStreamError(f"{NAME}: the stream sent data that is not JSON: {error}") from error
            for out in step.finish():
                yield out


# --- the request ----------------------------------------------------------------------


def anthropic_tools(request: ModelRequest) -> list[Any]:
    return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools]


def anthropic_messages(messages: tuple[Message, ...]) -> list[Any]:
    """Our conversation as Messages API turns.

    Tool results become ``tool_result`` blocks of a user turn. Consecutive turns of
    one role are merged, since the API wants user and assistant to alternate.
    """
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue  # the API refuses empty turns and empty text blocks
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.call_id or "",
                "content": message.text,
                "is_error": message.is_error,
            }
        ]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    # A call whose arguments were not JSON goes back with empty input; its tool result says why.
    blocks += [
        {"type": "tool_use", "id": call.call_id, "name": call.name, "input": call.arguments or {}}
        for call in message.tool_calls
    ]
    return blocks


# --- the stream -----------------------------------------------------------------------


@dataclass
class _PendingCall:
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Step:
    """What one streamed message has said so far; tool input arrives in pieces, by block index."""

    calls: dict[int, _PendingCall] = field(default_factory=dict)
    usage: Usage | None = None
    stopped: bool = False

    def read(self, event: RawMessageStreamEvent) -> list[StreamEvent]:
        # The SDK builds events without validating them, so any field may be missing.
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._usage(getattr(getattr(event, "message", None), "usage", None))
        elif kind == "content_block_start":
            return self._block_start(event)
        elif kind == "content_block_delta":
            return self._block_delta(event)
        elif kind == "content_block_stop":
            call = self.calls.pop(_index(event), None)
            if call is not None:
                return [ToolCallEvent(parse_tool_call(call.call_id, call.name, "".join(call.arguments)))]
        elif kind == "message_delta":
            self._usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.stopped = True
        # Other event types are newer than this code; skipping them is what the API asks.
        return []

    def _block_start(self, event: Any) -> list[StreamEvent]:
        block = getattr(event, "content_block", None)
        kind = getattr(block, "type", None)
        if kind == "tool_use":
            self.calls[_index(event)] = _PendingCall(getattr(block, "id", ""), getattr(block, "name", ""))
        elif kind == "text" and (text := _text(block, "text")):
            return [TextDelta(text)]
        elif kind == "thinking" and (text := _text(block, "thinking")):
            return [ReasoningDelta(text)]
        return []

    def _block_delta(self, event: Any) -> list[StreamEvent]:
        delta = getattr(event, "delta", None)
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and (text := _text(delta, "text")):
            return [TextDelta(text)]
        if kind == "thinking_delta" and (text := _text(delta, "thinking")):
            return [ReasoningDelta(text)]
        if kind == "input_json_delta":
            call = self.calls.get(_index(event))
            if call is None:
                raise ModelStreamError(f"{NAME}: input_json_delta for block {_index(event)}, which is not a tool_use")
            call.arguments.append(_text(delta, "partial_json"))
        return []

    def _usage(self, usage: Any) -> None:
        """Fold in ``message_start`` or ``message_delta`` usage; the latter's counts are cumulative."""
        if usage is None:
            return
        current = self.usage or Usage()
        read = _count(usage, "cache_read_input_tokens", current.cache_read_tokens)
        uncached = _count(usage, "input_tokens", current.input_tokens - current.cache_read_tokens)
        details = getattr(usage, "output_tokens_details", None)
        self.usage = Usage(
            input_tokens=uncached + read,
            output_tokens=_count(usage, "output_tokens", current.output_tokens),
            cache_read_tokens=read,
            cache_write_tokens=_count(usage, "cache_creation_input_tokens", current.cache_write_tokens),
            reasoning_tokens=_count(details, "thinking_tokens", current.reasoning_tokens),
        )

    def finish(self) -> list[StreamEvent]:
        if not self.stopped:
            raise ModelStreamError(f"{NAME}: the stream ended before message_stop")
        if self.calls:
            raise ModelStreamError(f"{NAME}: the stream stopped inside a tool_use block")
        return [UsageEvent(self.usage)] if self.usage is not None else []


def _index(event: Any) -> int:
    index = getattr(event, "index", None)
    if not isinstance(index, int):
        raise ModelStreamError(f"{NAME}: the stream sent a {getattr(event, 'type', '?')} event without an index")
    return index


def _text(item: Any, name: str) -> str:
    value = getattr(item, name, None)
    return value if isinstance(value, str) else ""


def _count(usage: Any, name: str, default: int) -> int:
    value = getattr(usage, name, None)
    return value if isinstance(value, int) else default


# --- errors ---------------------------------------------------------------------------

# ``error`` events inside a 200 stream carry only the error type.
STREAM_ERRORS: dict[str, type[ModelError]] = {
    "overloaded_error": ModelUnavailable,
    "api_error": ModelUnavailable,
    "rate_limit_error": ModelRateLimited,
    "timeout_error": ModelTimeout,
    "authentication_error": ModelAuthError,
    "permission_error": ModelAuthError,
}


def model_error(error: anthropic.AnthropicError, timeout: float) -> ModelError:
    """The ``ModelError`` for an SDK error, with the provider's own message."""
    if isinstance(error, anthropic.APITimeoutError):
        return ModelTimeout(f"{NAME}: no answer within {timeout:g}s")
    if isinstance(error, anthropic.APIConnectionError):
        return ModelUnavailable(f"{NAME}: could not reach the server: {error_cause(error)}")
    if isinstance(error, anthropic.APIStatusError):
        status, message = error.status_code, _provider_message(error)
        if status < 400:  # an ``error`` event in the stream
            kind = str(error.type or "error")
            return STREAM_ERRORS.get(kind, ModelStreamError)(f"{NAME}: the stream reported {kind}: {message}")
        return status_error(NAME, status, message)  # 529 overloaded is a 5xx
    if isinstance(error, anthropic.APIError):
        return ModelStreamError(f"{NAME}: unreadable response: {error.message}")
    return ModelError(f"{NAME}: {error}")


def _provider_message(error: anthropic.APIStatusError) -> str:
    if error.api_message:
        return error.api_message
    body = error.body
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return error.message
