"""What an eval case imports: matchers for ``t.check``, the ``Turn`` that ``t.send``
returns, and ``EvalAssertionError``. No Django here: cases are authored code, and the
same case runs in a worker, a web process or the CLI."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

Matcher = Callable[[Any], bool]


class EvalAssertionError(AssertionError):
    """A case's own failed expectation: the case is ``failed``, not ``error``."""


def includes(part: Any) -> Matcher:
    """True when ``part`` is in the value (a substring, a list item, a dict key)."""

    def match(value: Any) -> bool:
        try:
            return part in value
        except TypeError:
            return False

    match.__name__ = f"includes({part!r})"
    return match


def equals(expected: Any) -> Matcher:
    """True when the value equals ``expected``."""

    def match(value: Any) -> bool:
        return bool(value == expected)

    match.__name__ = f"equals({expected!r})"
    return match


def matches(pattern: str, flags: int = 0) -> Matcher:
    """True when the regular expression ``pattern`` is found in ``str(value)``."""
    compiled = re.compile(pattern, flags)

    def match(value: Any) -> bool:
        return compiled.search(str(value)) is not None

    match.__name__ = f"matches({pattern!r})"
    return match


def not_(matcher: Matcher) -> Matcher:
    """The opposite of ``matcher``."""

    def match(value: Any) -> bool:
        return not matcher(value)

    match.__name__ = f"not_({describe(matcher)})"
    return match


def describe(matcher: Matcher) -> str:
    """A matcher's name for a gate's message."""
    return getattr(matcher, "__name__", None) or repr(matcher)


def args_match(expected: dict[str, Any], actual: Any) -> bool:
    """Subset match of tool arguments: each expected key is present and equal, or
    satisfies the matcher given for it."""
    if not isinstance(actual, dict):
        return False
    for key, want in expected.items():
        if key not in actual:
            return False
        got = actual[key]
        if callable(want):
            if not want(got):
                return False
        elif isinstance(want, dict):
            if not args_match(want, got):
                return False
        elif got != want:
            return False
    return True


@dataclass
class Turn:
    """One settled turn of a case's session, as ``t.send`` returns it."""

    message: str
    session_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = True
    index: int = 0
    error: str | None = None

    def expect_ok(self) -> Turn:
        """Raises EvalAssertionError unless the turn completed."""
        if not self.ok:
            raise EvalAssertionError(f"turn {self.index} did not complete: {self.error or 'failed'}")
        return self


class EvalTest(Protocol):
    """The ``t`` a case's ``test(t)`` gets."""

    reply: str
    events: list[dict[str, Any]]
    turns: list[Turn]
    session_id: str | None

    async def send(self, message: str, **options: Any) -> Turn: ...

    def succeeded(self) -> bool: ...

    def called(self, tool: str, times: int | None = None, args: dict[str, Any] | None = None) -> bool: ...

    def check(self, value: Any, matcher: Matcher) -> bool: ...


__all__ = [
    "EvalAssertionError",
    "EvalTest",
    "Matcher",
    "Turn",
    "args_match",
    "equals",
    "includes",
    "matches",
    "not_",
]
