"""OpenAI Chat Completions as a ``ModelProvider``.

Also serves servers that speak the same protocol (vLLM, llama.cpp, DeepSeek,
Ollama) through ``ProviderSettings.openai_base_url``; their ``reasoning_content``
(or ``reasoning``) deltas become ``ReasoningDelta``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import openai

from agents.runtime.providers.base import (
    Message,
    ModelError,
    ModelRequest,
    ModelStreamError,
    ModelTimeout,
    ModelUnavailable,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
    error_cause,
    parse_tool_call,
    status_error,
)

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage

    from agents.runtime.providers.base import ProviderSettings

NAME = "openai"
# Compatible servers name the reasoning field differently (vLLM and DeepSeek
# ``reasoning_content``, newer vLLM and OpenRouter ``reasoning``).
REASONING_FIELDS = ("reasoning_content", "reasoning")


class OpenAIProvider:
    """Streams one step from ``/chat/completions``.

    Example::

        provider = OpenAIProvider(ProviderSettings(openai_api_key="sk-..."))
        async for event in provider.stream(ModelRequest("gpt-4.1", "Be brief.", (Message("user", "hi"),))):
            ...

    Raises:
        ModelAuthError: 401 or 403.
        ModelRateLimited: 429.
        ModelTimeout: the request or the stream timed out.
        ModelUnavailable: 5xx, or the server could not be reached.
        ModelStreamError: the stream was malformed, reported an error or ended early.
        ModelError: any other 4xx, with the status and the provider's message.
    """

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    def _client(self) -> openai.AsyncOpenAI:
        # A client per step: its connection pool belongs to the running event loop,
        # and a worker may run each turn in a loop of its own.
        return openai.AsyncOpenAI(
            api_key=self.settings.openai_api_key or "unset",
            base_url=self.settings.openai_base_url or None,
            max_retries=0,  # the gateway retries, with its own budget
            timeout=self.settings.timeout,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async with self._client() as client:
            try:
                chunks = await client.chat.completions.create(
                    model=request.model,
                    messages=chat_messages(request),
                    tools=chat_tools(request) or openai.omit,
                    max_completion_tokens=request.max_output_tokens or openai.omit,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            except openai.OpenAIError as error:
                raise model_error(error, self.settings.timeout) from error
            step = _Step()
            async with chunks:
                try:
                    async for chunk in chunks:
                        for event in step.read(chunk):
                            yield event
                except openai.APITimeoutError as error:
                    raise ModelTimeout(f"{NAME}: the stream stalled for {self.settings.timeout:g}s") from error
                except openai.APIConnectionError as error:
                    raise ModelStreamError(
                        f"{NAME}: the connection was lost mid-stream: {error_cause(error)}"
                    ) from error
                except openai.OpenAIError as error:
                    raise model_error(error, self.settings.timeout) from error
                except json.JSONDecodeError as error:
                    raise ModelStreamError(f"{NAME}: the stream sent data that is not JSON: {error}") from error
            for event in step.finish():
                yield event


# --- the request ----------------------------------------------------------------------


def chat_tools(request: ModelRequest) -> list[Any]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in request.tools
    ]


def chat_messages(request: ModelRequest) -> list[Any]:
    """Our conversation as Chat Completions messages, the system prompt first."""
    messages: list[Any] = [{"role": "system", "content": request.system}] if request.system else []
    messages += [chat_message(message) for message in request.messages]
    return messages


def chat_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        # Chat Completions has no error flag on tool results; the text says so.
        return {"role": "tool", "tool_call_id": message.call_id or "", "content": message.text}
    if message.role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_json(call)},
                }
                for call in message.tool_calls
            ]
        return entry
    return {"role": "user", "content": message.text}


def _arguments_json(call: ToolCall) -> str:
    # Invalid JSON goes back as the model wrote it, so it can see its own mistake.
    return json.dumps(call.arguments) if call.arguments is not None else call.raw_arguments


# --- the stream -----------------------------------------------------------------------


@dataclass
class _PendingCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Step:
    """What one streamed step has said so far: tool calls arrive in pieces, by index."""

    calls: dict[int, _PendingCall] = field(default_factory=dict)
    usage: Usage | None = None
    finished: bool = False

    def read(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:
        # The SDK builds chunks without validating them, so any field may be missing.
        choices = getattr(chunk, "choices", None)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = _usage(usage)
        if choices is None and usage is None:
            raise ModelStreamError(f"{NAME}: the stream sent a chunk with neither choices nor usage: {chunk!r:.200}")
        events: list[StreamEvent] = []
        for choice in choices or ():
            if getattr(choice, "index", 0) != 0:
                continue  # we ask for one choice
            delta = getattr(choice, "delta", None)
            if delta is not None:
                events += self._delta(delta)
            if getattr(choice, "finish_reason", None):
                self.finished = True
        return events

    def _delta(self, delta: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        reasoning = _reasoning_text(delta)
        if reasoning:
            events.append(ReasoningDelta(reasoning))
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            events.append(TextDelta(content))
        for piece in getattr(delta, "tool_calls", None) or ():
            pending = self.calls.setdefault(getattr(piece, "index", 0), _PendingCall())
            if getattr(piece, "id", None):
                pending.call_id = piece.id
            function = getattr(piece, "function", None)
            if function is not None:
                if getattr(function, "name", None):
                    pending.name = function.name
                if getattr(function, "arguments", None):
                    pending.arguments.append(function.arguments)
        return events

    def finish(self) -> list[StreamEvent]:
        if not self.finished:
            raise ModelStreamError(f"{NAME}: the stream ended before the model finished (no finish_reason)")
        events: list[StreamEvent] = [
            # Some compatible servers send no call ids; the runtime needs distinct ones.
            ToolCallEvent(parse_tool_call(call.call_id or f"call_{index}", call.name, "".join(call.arguments)))
            for index, call in sorted(self.calls.items())
        ]
        if self.usage is not None:
            events.append(UsageEvent(self.usage))
        return events


def _reasoning_text(delta: Any) -> str:
    for name in REASONING_FIELDS:
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _usage(usage: CompletionUsage) -> Usage:
    return Usage(
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
        cache_read_tokens=_count(getattr(usage, "prompt_tokens_details", None), "cached_tokens"),
        reasoning_tokens=_count(getattr(usage, "completion_tokens_details", None), "reasoning_tokens"),
    )


def _count(item: Any, name: str) -> int:
    value = getattr(item, name, None)
    return value if isinstance(value, int) else 0


# --- errors ---------------------------------------------------------------------------


def model_error(error: openai.OpenAIError, timeout: float) -> ModelError:
    """The ``ModelError`` for an SDK error, with the provider's own message."""
    if isinstance(error, openai.APITimeoutError):
        return ModelTimeout(f"{NAME}: no answer within {timeout:g}s")
    if isinstance(error, openai.APIConnectionError):
        return ModelUnavailable(f"{NAME}: could not reach the server: {error_cause(error)}")
    if isinstance(error, openai.APIStatusError):
        return status_error(NAME, error.status_code, _provider_message(error))
    if isinstance(error, openai.APIError):
        # An ``{"error": ...}`` object inside a 200 stream, or a response the SDK could not read.
        return ModelStreamError(f"{NAME}: the stream reported an error: {error.message}")
    return ModelError(f"{NAME}: {error}")


def _provider_message(error: openai.APIStatusError) -> str:
    # The SDK keeps the body's ``error`` object; compatible servers may send anything.
    body = error.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or body.get("error")
        if message:
            return str(message)
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return error.message
