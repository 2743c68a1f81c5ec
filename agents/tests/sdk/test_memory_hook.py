"""``memory_hook``'s definition checks and its journal entries (the hook at work, through
a worker and the HTTP API, is sessions_app/tests/test_memory_journal.py)."""

from __future__ import annotations

import pytest

from agents.sdk import DefinitionError, Hook
from agents.sdk.memory import journal_entry, memory_hook, trimmed


def test_the_hook_takes_the_turn_events_and_refuses_unusable_settings():
    hook = memory_hook()
    assert isinstance(hook, Hook)
    assert sorted(hook.events) == ["actions.requested", "message.received", "turn.completed", "turn.failed"]
    for bad in [{"path": "../escape.md"}, {"path": "/abs.md"}, {"path": ""}, {"path": "a\\b"}]:
        with pytest.raises(DefinitionError, match="memory_hook path"):
            memory_hook(**bad)
    with pytest.raises(DefinitionError, match="max_entry_chars must be a positive integer"):
        memory_hook(max_entry_chars=0)
    with pytest.raises(DefinitionError, match="include_eval"):
        memory_hook(include_eval="yes")  # type: ignore[arg-type]


def test_an_entry_quotes_the_turn_and_fits_its_limit():
    entry = journal_entry(
        at="2026-12-01T09:30:05.123456Z",
        session_id="ses_a",
        title="Door\n## colour",
        message="## not a heading\nsecond line",
        reply="blue",
        tools=["recall", "Read"],
        max_chars=2000,
    )
    assert entry.startswith("## 2026-12-01 09:30:05 UTC · ses_a · Door ## colour\n\n")  # a title is one line
    assert "> ## not a heading\n> second line" in entry and "> blue" in entry
    assert entry.endswith("Tools: recall, Read\n")
    long = journal_entry(
        at="", session_id="ses_b", title="", message="m" * 5000, reply="r" * 5000, tools=[], max_chars=400
    )
    assert len(long) <= 400 and "m…" in long and "r…" in long and "Tools: none" in long


def test_a_journal_past_its_limit_keeps_its_newest_whole_entries():
    entries = [f"## entry {n}\n\n> {'x' * 50}\n" for n in range(10)]
    journal = "\n".join(entries)
    kept = trimmed(journal, 300)
    assert len(kept) <= 300 and kept.startswith("(earlier entries were dropped")
    assert "## entry 9" in kept and "## entry 0" not in kept
    assert trimmed(kept + "\n## entry 10\n", 300).count("earlier entries were dropped") == 1
