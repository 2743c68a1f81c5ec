"""Check the final answer: every triage must end with a ``Severity: <level>`` line; keep
the morning digest (the ``daily-digest`` schedule's answer) as a ``digest`` artifact."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from agents.sdk import ResultContext, define_result

from .lib.issues import SEVERITIES

logger = logging.getLogger("examples.triage.result")

# "Severity: high", also in Markdown ("**Severity:** high") or after a prefix ("echo: Severity: high").
_SEVERITY = re.compile(r"\bseverity\**\s*:\s*\**\s*(\w+)", re.IGNORECASE)


def parse_severity(text: str) -> str:
    """The severity named by the last ``Severity: <level>`` in ``text``.

    Raises:
        ValueError: when there is no such line or the level is unknown.
    """
    found = _SEVERITY.findall(text)
    if not found:
        raise ValueError("the triage has no 'Severity: <level>' line")
    severity = found[-1].lower()
    if severity not in SEVERITIES:
        raise ValueError(f"unknown severity {severity!r}; use one of {', '.join(SEVERITIES)}")
    return severity


# The heading daily-digest.md asks the digest to carry, on a line of its own.
_DIGEST_HEADING = re.compile(r"^#\s+Triage digest\s*$", re.IGNORECASE | re.MULTILINE)


def is_digest(ctx: ResultContext) -> bool:
    """The answer of a scheduled run that carries the digest's heading."""
    return ctx.session.channel == "schedule" and _DIGEST_HEADING.search(ctx.text) is not None


async def commit(ctx: ResultContext) -> None:
    """Fail the turn unless the answer states a severity; keep a digest; log the decision."""
    severity = parse_severity(ctx.text)
    if is_digest(ctx) and ctx.artifacts is not None:
        name = f"digest-{datetime.now(UTC):%Y-%m-%d}.md"  # a second run the same day replaces it
        await ctx.artifacts.tag(
            name, ctx.text, kind="digest", content_type="text/markdown", metadata={"severity": severity}
        )
    logger.info("triage committed session=%s severity=%s", ctx.session.id, severity)


result = define_result(commit=commit)
