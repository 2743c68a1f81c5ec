"""The shop's own FAQ: the answers its customers actually get."""

from __future__ import annotations

import re

FAQ: dict[str, str] = {
    "How long does delivery take?": "2-4 working days in the EU, 5-8 elsewhere. Orders ship from Lyon.",
    "How do I return an item?": "Within 30 days, unworn, with the label. Start the return from the order page; "
    "the return label is free in the EU.",
    "When do I get my refund?": "Within 5 working days of the return reaching us, on the original payment method.",
    "Can I change my delivery address?": "Yes, until the order ships. Ask support with the order number.",
    "Do you ship outside the EU?": "Yes, to the UK, Switzerland, Norway and the US; duties are paid on delivery.",
}

_WORD = re.compile(r"[a-z]+")


def search(query: str, limit: int = 3) -> list[dict[str, str]]:
    """FAQ entries sharing words with ``query``, most shared words first."""
    wanted = set(_WORD.findall(query.lower()))
    scored = []
    for question, answer in FAQ.items():
        overlap = len(wanted & set(_WORD.findall(f"{question} {answer}".lower())))
        if overlap:
            scored.append((overlap, question, answer))
    scored.sort(key=lambda item: -item[0])
    return [{"question": question, "answer": answer} for _, question, answer in scored[:limit]]
