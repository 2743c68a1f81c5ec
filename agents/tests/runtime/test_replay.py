"""A turn whose worker died after any event resumes from its log: the log it ends
with is the log of a run that never died, and no logged call runs twice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agents.events import EventType
from agents.runtime.emitter import MemorySink, RecordedEvent
from agents.runtime.replay import Journal
from agents.runtime.turn import Decision, TurnOutcome, pending_calls, resume_turn, run_turn
from agents.tests.runtime.conftest import BASE, Harness
from agents.tests.trees import write_tree


def tree(ledger: Path) -> dict[str, str]:
    effect = f'''
        import os
        from agents.sdk import ToolContext, tool


        @tool(effect="write")
        def effect(ctx: ToolContext, key: str) -> str:
            """Record one external effect per execution."""
            with open({str(ledger)!r}, "a") as ledger:
                ledger.write(f"{{ctx.call_id}} {{key}}\\n")
            return f"did {{key}}"
    '''
    return {
        **BASE,
        "agent/tools/effect.py": effect,
        "agent/tools/gated.py": '''
            from agents.sdk import tool


            @tool(effect="write", needs_approval=True)
            def gated(n: int) -> str:
                """Needs a person's approval."""
                return f"gated {n}"
        ''',
        "agent/subagents/helper/agent.py": """
            from agents.sdk import define_agent

            agent = define_agent(description="Helps.")
        """,
        "agent/subagents/helper/instructions.md": "You help.",
        "agent/subagents/helper/tools/effect.py": effect,
    }


SCRIPT = "\n".join(
    [
        "/stream 6",
        '/call effect {"key": "a"}',
        '/call effect {"key": "b"}',
        '/subagent helper /call effect {"key": "c"}',
    ]
)


class Died(Exception):
    """The worker died here: nothing after this event happened."""


class DyingSink(MemorySink):
    """Keeps events like the log, and dies right after the ``die_after``-th one."""

    def __init__(self, logged: list[RecordedEvent], die_after: int | None) -> None:
        super().__init__(list(logged))
        self.die_after = die_after

    async def emit(self, type: EventType, data: dict[str, Any], turn_id: str | None) -> None:
        await super().emit(type, data, turn_id)
        if self.die_after is not None and len(self.events) >= self.die_after:
            raise Died


def attempt(harness: Harness, sink: DyingSink, body_for: Any) -> TurnOutcome | None:
    journal = Journal([(str(e.type), e.data) for e in sink.events]) if sink.events else None
    try:
        return asyncio.run(body_for(sink, journal))
    except Died:
        return None


def normalized(events: list[RecordedEvent]) -> list[tuple[str, str]]:
    """Types and data with call ids numbered by first appearance, and consecutive
    deltas merged (how deltas are coalesced depends on timing)."""
    ids: dict[str, str] = {}

    def rename(match: str) -> str:
        return ids.setdefault(match, f"call#{len(ids)}")

    out: list[tuple[str, str]] = []
    for event in events:
        data = dict(event.data)
        if event.type == EventType.STEP_COMPLETED:
            data.pop("usage", None)  # the lost attempt's model usage is counted once, either way
        text = json.dumps(data, sort_keys=True)
        for call_id in sorted(set(_call_ids(text)), key=text.index):
            text = text.replace(call_id, rename(call_id))
        delta = event.type in (EventType.MESSAGE_APPENDED, EventType.REASONING_APPENDED)
        if delta and out and out[-1][0] == event.type:
            merged = json.loads(out[-1][1])
            merged["text"] += json.loads(text)["text"]
            out[-1] = (out[-1][0], json.dumps(merged, sort_keys=True))
            continue
        out.append((str(event.type), text))
    return out


def _call_ids(text: str) -> list[str]:
    import re

    return re.findall(r"call_[0-9a-f]{16}", text)


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


@pytest.fixture
def harness(tmp_path, monkeypatch) -> tuple[Harness, Path]:
    from agents.runtime.turn import RuntimeSettings

    monkeypatch.setattr("agents.runtime.emitter.COALESCE_SECONDS", 0)  # one event per delta: deaths mid-stream
    ledger = tmp_path / "ledger.txt"
    agent = Harness(tmp_path / "agent", RuntimeSettings())
    write_tree(agent.folder, tree(ledger))
    return agent, ledger


def run_body(harness: Harness, message: str) -> Any:
    def body(sink: DyingSink, journal: Journal | None) -> Any:
        return run_turn(harness.surface(), harness.request(message), sink, harness.settings, journal)

    return body


def test_a_turn_that_died_after_any_event_ends_with_the_log_of_one_that_never_died(harness):
    agent, ledger = harness
    clean = DyingSink([], None)
    assert attempt(agent, clean, run_body(agent, SCRIPT)).status == "completed"
    expected = normalized(clean.events)
    assert len(ledger_lines(ledger)) == 3
    assert [str(e.type) for e in clean.events].count("message.appended") >= 6
    clean_text = clean.events[-1].data["result"]
    for die_after in range(1, len(clean.events) + 1):
        ledger.unlink()
        sink = DyingSink([], die_after)
        assert attempt(agent, sink, run_body(agent, SCRIPT)) is None, die_after
        logged_results = {e.data["callId"] for e in sink.events if e.type == EventType.ACTION_RESULT}
        sink.die_after = None
        outcome = attempt(agent, sink, run_body(agent, SCRIPT))
        assert outcome is not None and outcome.status == "completed", (die_after, outcome)
        assert outcome.text == clean_text
        assert normalized(sink.events) == expected, die_after
        runs = [line.split()[0] for line in ledger_lines(ledger)]
        # A call whose result was logged never runs again; any other runs at most once more.
        assert all(runs.count(call_id) == 1 for call_id in logged_results if call_id in runs), die_after
        assert all(runs.count(call_id) <= 2 for call_id in runs), die_after
        assert len(set(runs)) == 3, die_after


def test_a_resumed_approval_that_died_after_any_event_runs_the_call_once(harness):
    agent, _ = harness
    message = '/call effect {"key": "a"}\n/call gated {"n": 1}'
    first = DyingSink([], None)
    parked = attempt(agent, first, run_body(agent, message))
    assert parked is not None and parked.status == "parked" and parked.state is not None
    [gated] = pending_calls(parked.state)
    decisions = {gated["callId"]: Decision(True, "", "alice")}

    def resume_body(sink: DyingSink, journal: Journal | None) -> Any:
        state = json.loads(json.dumps(parked.state))
        return resume_turn(agent.surface(), agent.request(""), state, decisions, sink, agent.settings, journal)

    clean = DyingSink(first.events, None)
    assert attempt(agent, clean, resume_body).status == "completed"
    expected = normalized(clean.events)
    for die_after in range(len(first.events) + 1, len(clean.events)):
        sink = DyingSink(first.events, die_after)
        assert attempt(agent, sink, resume_body) is None
        sink.die_after = None
        outcome = attempt(agent, sink, resume_body)
        assert outcome is not None and outcome.status == "completed", die_after
        assert normalized(sink.events) == expected, die_after
        types = [str(e.type) for e in sink.events]
        assert types.count("action.approval_resolved") == 1 and types.count("turn.completed") == 1


def test_a_turn_that_died_before_it_parked_parks_again_without_asking_twice(harness):
    agent, _ = harness
    message = '/call gated {"n": 1}'
    clean = DyingSink([], None)
    assert attempt(agent, clean, run_body(agent, message)).status == "parked"
    for die_after in range(1, len(clean.events) + 1):
        sink = DyingSink([], die_after)
        assert attempt(agent, sink, run_body(agent, message)) is None
        sink.die_after = None
        outcome = attempt(agent, sink, run_body(agent, message))
        assert outcome is not None and outcome.status == "parked"
        assert normalized(sink.events) == normalized(clean.events)
        [requested] = [e for e in sink.events if e.type == EventType.ACTION_APPROVAL_REQUESTED]
        assert outcome.state is not None and outcome.state["pending"] == [requested.data["callId"]]
