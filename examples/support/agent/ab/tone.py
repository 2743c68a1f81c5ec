"""Does a warmer tone or a more concise one serve customers better?

Each live session gets one arm for good (``ab.assigned``, ``ctx.session.abs["tone"]``);
the arm's instructions join every turn's prompt. After each settled turn ``metrics``
gets the session's totals so far and its return replaces the session's values, which
``GET /support/v1/abs`` and the playground's A/Bs tab compare against the first arm.
"""

from agents.sdk import define_ab


def metrics(sample: dict) -> dict[str, float]:
    """Fewer turns and fewer failures for the same question is better service."""
    return {
        "turns": sample["turns"],
        "failedTurns": sample["failedTurns"],
        "toolCalls": sample["toolCalls"],
        "outputTokens": sample["outputTokens"],
    }


experiment = define_ab(
    arms=["warm", "concise"],
    weights=[1, 1],
    description="Reply tone: warm and personal versus short and to the point.",
    instructions={
        "warm": "Greet the customer by name when you know it, acknowledge how they feel before "
        "answering, and close by offering further help.",
        "concise": "Answer in at most three sentences. Lead with the answer; skip greetings and "
        "sign-offs unless the customer used them.",
    },
    metrics=metrics,
)
