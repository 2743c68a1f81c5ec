"""Does a warmer tone or a more concise one serve customers better?"""

from agents.sdk import define_ab

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
)
