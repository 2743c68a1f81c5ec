"""What the model is told: instructions, extension fragments, skills, A/B arm, workspace files."""

from __future__ import annotations

import asyncio

from agents.runtime.prompt import instructions_text, system_prompt
from agents.sdk import SessionInfo, ToolContext

CTX = ToolContext(session=SessionInfo(id="ses_p", agent="agent", channel="slack"))


def prompt_for(agent, arms=None, files=()) -> str:
    surface = agent.surface()
    return system_prompt(surface, asyncio.run(instructions_text(surface, CTX)), arms or {}, list(files))


def test_the_prompt_starts_with_the_instructions_and_lists_the_skills(agent):
    agent.write({"agent/skills/refunds.md": "---\ndescription: How to refund an order\n---\nSteps."})
    prompt = prompt_for(agent)
    assert prompt.startswith("You are a test agent.")
    assert "- refunds: How to refund an order" in prompt
    assert "Steps." not in prompt  # bodies load on demand


def test_dynamic_instructions_are_rendered_for_the_session(agent):
    agent.write(
        {
            "agent/instructions.md": "Static part.",
            "agent/instructions/zz_channel.py": """
                from agents.sdk import define_instructions

                instructions = define_instructions(lambda ctx: f"You are answering on {ctx.session.channel}.")
            """,
        }
    )
    prompt = prompt_for(agent)
    assert prompt.index("Static part.") < prompt.index("You are answering on slack.")


def test_the_assigned_arm_adds_its_instructions(agent):
    agent.write(
        {
            "agent/ab/tone.py": """
                from agents.sdk import define_ab

                tone = define_ab(arms=["warm", "concise"], instructions={"warm": "Be warm.", "concise": "Be terse."})
            """
        }
    )
    assert "Be terse." in prompt_for(agent, {"tone": "concise"})
    assert "Be warm." not in prompt_for(agent, {"tone": "concise"})
    assert "Be warm." not in prompt_for(agent)


def test_workspace_files_are_listed(agent):
    assert "- notes/todo.md" in prompt_for(agent, files=["notes/todo.md", "AGENTS.md"])


def test_extension_instructions_follow_the_agents_own(agent, tmp_path):
    agent.write(
        {
            "agent/extensions/shop.py": 'from agents.sdk import mount\n\nshop = mount("../../../shop")\n',
        }
    )
    from agents.tests.trees import write_tree

    write_tree(tmp_path / "shop", {"instructions.md": "Shop rules apply."})
    prompt = prompt_for(agent)
    assert prompt.index("You are a test agent.") < prompt.index("Shop rules apply.")
