"""``agent init NAME``: a new agent tree that validates cleanly."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "agent/agent.py": """\
from agents.sdk import define_agent

agent = define_agent(description="{name}: describe what this agent does.")
""",
    "agent/instructions.md": """\
You are {name}. Answer briefly and say plainly when you do not know.
""",
    "agent/tools/word_count.py": '''\
from agents.sdk import ToolContext, tool


@tool(effect="read")
def word_count(ctx: ToolContext, text: str) -> dict:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return {{"words": len(text.split())}}
''',
    "agent/hooks/log_turns.py": """\
import logging

from agents.sdk import HookContext, define_hook

logger = logging.getLogger(__name__)


def on_turn_completed(event: dict, ctx: HookContext) -> None:
    logger.info("turn completed in session %s", ctx.session.id)


hook = define_hook(events={{"turn.completed": on_turn_completed}})
""",
    # Memory across sessions (docs/memory.md): delete this file to opt out.
    "agent/hooks/memory.py": """\
from agents.sdk.memory import memory_hook

# A journal of each live session's turns, shown read-only as memory/ in new sessions.
hook = memory_hook()
""",
    "evals/evals.config.py": """\
from agents.sdk import define_evals_config

config = define_evals_config(max_concurrency=2)
""",
    "evals/smoke.eval.py": """\
from agents.sdk import define_eval


async def test(t) -> None:
    await t.send("/call word_count {{\\"text\\": \\"one two three\\"}}")
    assert t.called("word_count")


case = define_eval(test=test, description="The agent can call its tool.")
""",
}


def scaffold(folder: Path) -> list[Path]:
    """Write a new agent into ``folder`` (which must not exist); returns the files written.

    Raises:
        FileExistsError: when ``folder`` exists.
    """
    folder.mkdir(parents=True)
    written = []
    for relative, template in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=folder.name))
        written.append(path)
    return written
