"""Check the final answer: every triage must end with a ``Severity: <level>`` line."""

from __future__ import annotations

import logging
import re

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


def commit(ctx: ResultContext) -> None:
    """Fail the turn unless the answer states a severity; log the decision otherwise."""
    severity = parse_severity(ctx.text)
    logger.info("triage committed session=%s severity=%s", ctx.session.id, severity)


result = define_result(commit=commit)
