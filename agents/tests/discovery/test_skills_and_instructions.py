"""skills/ (Markdown with front matter, <name>/SKILL.md, define_skill) and instructions (.md, .py, a folder)."""

from __future__ import annotations

from agents.tests.trees import codes, only

PLAN_SKILL = """
    ---
    description: Plan a trip step by step.
    ---
    1. Ask where.
    2. Ask when.
"""


def test_a_markdown_skill_takes_its_description_from_front_matter_and_its_body_from_the_rest(build):
    surface = build({"agent/skills/plan.md": PLAN_SKILL})
    assert codes(surface) == []
    skill = surface.skills["plan"].value
    assert skill.description == "Plan a trip step by step."
    assert skill.body == "1. Ask where.\n2. Ask when."
    assert skill.source == "skill"


def test_a_skill_folder_is_named_by_the_folder_and_read_from_skill_md(build):
    surface = build({"agent/skills/packing/SKILL.md": PLAN_SKILL, "agent/skills/packing/checklist.md": "- socks"})
    assert codes(surface) == []
    assert list(surface.skills) == ["packing"]
    assert surface.skills["packing"].value.description == "Plan a trip step by step."


def test_a_python_skill_is_made_with_define_skill(build):
    surface = build(
        {
            "agent/skills/cook.py": """
                from agents.sdk import define_skill

                skill = define_skill(description="Cook pasta.", instructions="Boil water. Add pasta.")
            """
        }
    )
    assert codes(surface) == []
    assert (surface.skills["cook"].value.description, surface.skills["cook"].value.body) == (
        "Cook pasta.",
        "Boil water. Add pasta.",
    )


def test_skills_appear_in_info_with_description_and_source(build):
    info = build({"agent/skills/plan.md": PLAN_SKILL}).info("test")
    assert info["skills"] == [
        {"name": "plan", "description": "Plan a trip step by step.", "source": "skill", "extension": None}
    ]


def test_a_markdown_skill_without_a_description_is_invalid(build):
    surface = build({"agent/skills/plan.md": "Just a body."})
    assert codes(surface) == ["agents.E014"]
    assert surface.skills == {}


def test_a_markdown_skill_without_a_body_is_invalid(build):
    surface = build({"agent/skills/plan.md": "---\ndescription: Plan.\n---\n"})
    assert codes(surface) == ["agents.E014"]


def test_a_skill_folder_without_skill_md_is_a_stray(build):
    surface = build({"agent/skills/packing/notes.md": "notes"})
    assert codes(surface) == ["agents.W012"]
    assert only(surface, "agents.W012").path == "agent/skills/packing"


def test_a_skill_file_of_another_type_is_a_stray(build):
    surface = build({"agent/skills/plan.txt": "Plan."})
    assert codes(surface) == ["agents.W012"]


def test_markdown_instructions_are_the_system_prompt(build):
    surface = build({"agent/instructions.md": "\n  Be brief.  \n"}, instructions=False)
    assert codes(surface) == []
    assert [entry.value.text for entry in surface.instructions] == ["Be brief."]


def test_python_instructions_hold_fixed_text_from_define_instructions(build):
    surface = build(
        {
            "agent/instructions.py": """
                from agents.sdk import define_instructions

                instructions = define_instructions("Answer in French.")
            """
        },
        instructions=False,
    )
    assert codes(surface) == []
    assert [entry.value.text for entry in surface.instructions] == ["Answer in French."]


def test_python_instructions_may_be_rendered_per_session_and_show_as_dynamic(build):
    surface = build(
        {
            "agent/instructions.py": """
                from agents.sdk import define_instructions

                instructions = define_instructions(lambda ctx: f"Session {ctx.session.id}")
            """
        },
        instructions=False,
    )
    assert codes(surface) == []
    assert callable(surface.instructions[0].value.render)
    assert surface.info("test")["instructions"] == [{"path": "instructions.py", "dynamic": True, "extension": None}]


def test_an_instructions_folder_contributes_each_file_in_name_order(build):
    surface = build(
        {
            "agent/instructions/20-tone.md": "Be kind.",
            "agent/instructions/10-role.md": "You are a travel agent.",
            "agent/instructions/30-date.py": """
                from agents.sdk import define_instructions

                instructions = define_instructions("Dates are ISO 8601.")
            """,
        },
        instructions=False,
    )
    assert codes(surface) == []
    assert [entry.value.text for entry in surface.instructions] == [
        "You are a travel agent.",
        "Be kind.",
        "Dates are ISO 8601.",
    ]


def test_root_instruction_files_come_before_the_instructions_folder(build):
    surface = build({"agent/instructions/extra.md": "Extra."})
    assert [entry.path.name for entry in surface.instructions] == ["instructions.md", "extra.md"]


def test_a_stray_file_in_the_instructions_folder_is_reported(build):
    surface = build({"agent/instructions/notes.txt": "x"})
    assert codes(surface) == ["agents.W012"]


def test_a_markdown_and_a_python_skill_of_the_same_name_are_a_duplicate(build):
    surface = build(
        {
            "agent/skills/plan.md": PLAN_SKILL,
            "agent/skills/plan.py": """
                from agents.sdk import define_skill

                skill = define_skill(description="Plan differently.", instructions="Other steps.")
            """,
        }
    )
    assert codes(surface) == ["agents.E019"]


def test_a_skill_file_and_a_skill_folder_of_the_same_name_are_a_duplicate(build):
    surface = build({"agent/skills/plan.md": PLAN_SKILL, "agent/skills/plan/SKILL.md": PLAN_SKILL})
    assert codes(surface) == ["agents.E019"]
