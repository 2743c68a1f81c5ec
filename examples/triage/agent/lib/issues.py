"""A tiny in-memory issue tracker, so the example runs offline and deterministically."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[Severity, ...] = ("low", "medium", "high", "critical")


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    component: str
    state: Literal["open", "closed"] = "open"


KNOWN_ISSUES: tuple[Issue, ...] = (
    Issue(101, "Login page returns 500 after password reset", "auth"),
    Issue(102, "CSV export drops rows with unicode names", "export"),
    Issue(103, "Dark mode toggle does not persist across reloads", "ui"),
    Issue(104, "Webhook retries hammer the endpoint without backoff", "webhooks"),
    Issue(105, "Search results ignore the date filter", "search"),
    Issue(106, "Password reset email arrives twice", "auth", "closed"),
)

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset({"a", "an", "the", "of", "on", "in", "to", "with", "and", "or", "is", "not", "does", "after"})


def words(text: str) -> set[str]:
    """The meaningful lower-case words of ``text``."""
    return {word for word in _WORD.findall(text.lower()) if word not in _STOP_WORDS}


def similar(text: str, *, limit: int = 3, min_score: float = 0.2) -> list[tuple[Issue, float]]:
    """Known issues whose titles share words with ``text``, best first (Jaccard score)."""
    query = words(text)
    scored = []
    for issue in KNOWN_ISSUES:
        title = words(issue.title)
        score = len(query & title) / len(query | title) if query | title else 0.0
        if score >= min_score:
            scored.append((issue, round(score, 2)))
    scored.sort(key=lambda pair: (-pair[1], pair[0].number))
    return scored[:limit]
