"""The result commit: a triage that states a severity completes, one that does not fails."""

from __future__ import annotations

from agents.sdk import define_eval
from agents.sdk.evals import EvalTest, equals, includes


async def test(t: EvalTest) -> None:
    """Label an issue, then answer once with a severity line and once without."""
    turn = await t.send('/call set_severity {"number": 42, "severity": "high", "component": "auth"}')
    t.called("set_severity", args={"number": 42, "severity": "high"})
    t.check(turn.tool_calls[0]["output"]["labels"], includes("component:auth"))

    stated = await t.send("Severity: high")
    t.check(stated.ok, equals(True))

    # commit refuses an answer with no "Severity:" line, so that turn fails.
    unstated = await t.send("looks like a login bug")
    t.check(unstated.ok, equals(False))


case = define_eval(test=test, description="set_severity's labels and the severity gate of commit", tags=["triage"])
