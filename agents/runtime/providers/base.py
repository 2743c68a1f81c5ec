"""The one interface every model provider implements.

A provider turns a ``ModelRequest`` (system prompt, conversation, tools) into a
stream of typed events: text deltas, reasoning deltas, complete tool calls and
usage. Errors are ``ModelError`` subclasses that say whether a retry may help.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A complete tool call from the model; ``arguments`` is the parsed JSON object,
    or ``None`` with ``raw_arguments`` kept when the model sent invalid JSON."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""


def parse_tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A complete call from its raw argument text; ``arguments`` is None when ``raw``
    is not a JSON object (an empty text is ``{}``)."""
    if not raw.strip():
        return ToolCall(call_id, name, {}, raw)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return ToolCall(call_id, name, None, raw)
    return ToolCall(call_id, name, arguments if isinstance(arguments, dict) else None, raw)


@dataclass(frozen=True)
class Message:
    """One entry of the conversation sent to the model."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # For role "tool": which call this answers.
    call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ModelRequest:
    model: str  # the provider's model name (without the "provider:" prefix)
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class Usage:
    """Token counts of a step or a turn. ``input_tokens`` counts every prompt token,
    cache reads included (``cache_read_tokens`` says how many of them were); cache
    writes are only in ``cache_write_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "reasoningTokens": self.reasoning_tokens,
        }


@dataclass(frozen=True)
class TextDelta:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class UsageEvent:
    usage: Usage = field(default_factory=Usage)
    kind: Literal["usage"] = "usage"


StreamEvent = TextDelta | ReasoningDelta | ToolCallEvent | UsageEvent


class ModelProvider(Protocol):
    """Streams one model step."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


class ModelError(Exception):
    """A model step failed; ``retryable`` says whether trying again may help."""

    retryable = False


class ModelAuthError(ModelError):
    """The provider refused the credentials."""


class ModelRateLimited(ModelError):
    retryable = True


class ModelTimeout(ModelError):
    retryable = True


class ModelUnavailable(ModelError):
    """The provider answered 5xx or the connection failed."""

    retryable = True


class ModelStreamError(ModelError):
    """The provider's stream was malformed or ended early (often a dropped connection)."""

    retryable = True


class ModelStepFailed(ModelError):
    """The model (or the test model's ``/fail``) failed the step on purpose."""


def status_error(provider: str, status: int, message: str) -> ModelError:
    """The ``ModelError`` for an HTTP error status from a provider, with its message:
    401/403 auth, 429 rate limit, 5xx unavailable, 408 timeout, any other 4xx refused."""
    if status in (401, 403):
        return ModelAuthError(f"{provider}: authentication failed ({status}): {message}")
    if status == 429:
        return ModelRateLimited(f"{provider}: rate limited ({status}): {message}")
    if status >= 500:
        return ModelUnavailable(f"{provider}: server error ({status}): {message}")
    if status == 408:
        return ModelTimeout(f"{provider}: the server timed out ({status}): {message}")
    return ModelError(f"{provider}: request refused ({status}): {message}")


def error_cause(error: BaseException) -> str:
    """What a transport error wraps (the SDKs put the socket error in ``__cause__``)."""
    cause = error.__cause__
    return f"{type(cause).__name__}: {cause}" if cause else str(error)


@dataclass(frozen=True)
class ProviderSettings:
    """Credentials, endpoints and the retry budget of the model providers."""

    openai_api_key: str = ""
    openai_base_url: str = ""
    anthropic_api_key: str = ""
    anthropic_base_url: str = ""
    max_retries: int = 2
    retry_base_delay: float = 0.5
    timeout: float = 120.0
