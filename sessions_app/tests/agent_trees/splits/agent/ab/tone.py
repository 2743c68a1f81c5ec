"""Three arms weighted 1:2:1; the arms' instructions are 0, 6 and 2 words long, so a
turn's input-token count (the test model counts words) shows which joined the prompt."""

from agents.sdk import define_ab


async def metrics(sample):  # async on purpose: the worker awaits it
    if sample["failedTurns"]:
        raise RuntimeError("no sample for a session with a failed turn")
    return {"turns": sample["turns"], "toolCalls": sample["toolCalls"]}


experiment = define_ab(
    arms=["plain", "fancy", "terse"],
    weights=[1, 2, 1],
    instructions={"fancy": "Use ornate words and long sentences.", "terse": "Be terse."},
    metrics=metrics,
    description="Does an ornate tone take more turns?",
)
