"""``SemanticSearch`` without a model: BM25 over files.

Deterministic and dependency-free, so it behaves the same in tests, evals and
production. A file's path counts as part of its text, so ``billing`` finds
``/docs/billing.md`` even when the word is not in it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.runtime.fs.base import split_lines

K1 = 1.2
B = 0.75

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case runs of letters and digits; ``snake_case`` and ``kebab-case`` split into words."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class SearchHit:
    """A file that matched, with its best line (the first with the most query terms)."""

    path: str
    score: float
    line_number: int
    line: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "score": self.score, "lineNumber": self.line_number, "line": self.line}


def _best_line(text: str, terms: set[str]) -> tuple[int, str]:
    best = (0, 0, "")
    for number, line in enumerate(split_lines(text), start=1):
        overlap = len(terms.intersection(tokenize(line)))
        if overlap > best[0]:
            best = (overlap, number, line)
    return best[1], best[2]


def rank(query: str, documents: Mapping[str, str], limit: int = 10) -> list[SearchHit]:
    """The ``limit`` best files of ``documents`` (path to text) for ``query``, by BM25 score
    (rounded to 4 places) high to low, then path. Files sharing no term with the query are left out.
    """
    terms = set(tokenize(query))
    if not terms or not documents or limit < 1:
        return []
    counts = {path: Counter(tokenize(path) + tokenize(text)) for path, text in documents.items()}
    lengths = {path: sum(counter.values()) for path, counter in counts.items()}
    average = sum(lengths.values()) / len(lengths) or 1.0
    frequency = {term: sum(1 for counter in counts.values() if term in counter) for term in terms}
    total = len(documents)
    hits: list[SearchHit] = []
    for path, counter in counts.items():
        score = 0.0
        for term in terms:
            occurrences = counter.get(term, 0)
            if not occurrences:
                continue
            idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
            norm = occurrences + K1 * (1 - B + B * lengths[path] / average)
            score += idf * occurrences * (K1 + 1) / norm
        if score > 0:
            line_number, line = _best_line(documents[path], terms)
            hits.append(SearchHit(path, round(score, 4), line_number, line))
    hits.sort(key=lambda hit: (-hit.score, hit.path))
    return hits[:limit]
