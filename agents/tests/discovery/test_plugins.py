"""plugin_mount(path=...): Claude- or Cursor-style plugin folders (plugin.json, skills/, commands/,
agents/, mcp.json) mounted like extensions."""

from __future__ import annotations

import pytest

from agents.tests.trees import codes, only

PLUGIN_MOUNT = """
    from agents.sdk import plugin_mount

    plugin = plugin_mount(path="../../vendor/review")
"""
MANIFEST = {"vendor/review/.claude-plugin/plugin.json": '{"name": "review", "version": "1.0.0"}'}


def plugin(files: dict[str, str]) -> dict[str, str]:
    return {"agent/extensions/review.py": PLUGIN_MOUNT, **MANIFEST, **files}


def test_plugin_skills_join_under_the_namespace(build):
    surface = build(plugin({"vendor/review/skills/lint/SKILL.md": "---\ndescription: Lint code.\n---\nRun ruff.\n"}))
    assert codes(surface) == []
    assert surface.info("test")["skills"] == [
        {"name": "review__lint", "description": "Lint code.", "source": "skill", "extension": "review"}
    ]


def test_plugin_commands_become_skills_with_source_command(build):
    surface = build(plugin({"vendor/review/commands/ship.md": "---\ndescription: Ship it.\n---\nDeploy now.\n"}))
    assert codes(surface) == []
    skill = surface.skills["review__ship"].value
    assert (skill.description, skill.body, skill.source) == ("Ship it.", "Deploy now.", "command")


def test_a_command_without_front_matter_is_described_by_its_first_line(build):
    surface = build(plugin({"vendor/review/commands/notes.md": "Write release notes.\nList every change.\n"}))
    assert surface.skills["review__notes"].value.description == "Write release notes."


def test_plugin_agents_become_subagents_with_their_body_as_instructions(build):
    surface = build(
        plugin(
            {
                "vendor/review/agents/reviewer.md": """
                    ---
                    description: Reviews a diff.
                    model: anthropic:claude-sonnet-4
                    ---
                    You review code carefully.
                """
            }
        )
    )
    assert codes(surface) == []
    child = surface.subagents["review__reviewer"]
    assert child.config.description == "Reviews a diff."
    assert child.config.model == "anthropic:claude-sonnet-4"
    assert [entry.value.text for entry in child.instructions] == ["You review code carefully."]


def test_a_plugin_agent_without_a_description_is_an_error(build):
    surface = build(plugin({"vendor/review/agents/reviewer.md": "You review code.\n"}))
    assert codes(surface) == ["agents.E009"]
    assert only(surface, "agents.E009").path == "vendor/review/agents/reviewer.md"
    assert surface.subagents == {}


def test_mcp_json_servers_become_connections(build):
    surface = build(
        plugin(
            {
                "vendor/review/mcp.json": """
                    {"mcpServers": {
                        "github": {"command": "github-mcp", "args": ["--read-only"]},
                        "local": {"command": "python3", "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"],
                                  "env": {"TOKEN": "${LOCAL_TOKEN}"}},
                        "docs": {"url": "https://docs.example.com/mcp"}
                    }}
                """
            }
        )
    )
    assert codes(surface) == []
    assert [(c["name"], c["transport"], c["target"]) for c in surface.info("test")["mcpConnections"]] == [
        ("review__docs", "http", "https://docs.example.com/mcp"),
        ("review__github", "stdio", "github-mcp"),
        ("review__local", "stdio", "python3"),
    ]
    local = surface.mcp_connections["review__local"].value
    assert local.args == (str(surface.path / "vendor" / "review" / "server.py"),)
    assert local.env == {"TOKEN": "${LOCAL_TOKEN}"}  # a secret, resolved on each connect


def test_an_mcp_json_server_without_command_or_url_is_an_error(build):
    surface = build(plugin({"vendor/review/mcp.json": '{"mcpServers": {"github": {}}}'}))
    assert codes(surface) == ["agents.E024"]


@pytest.mark.parametrize("servers", ["[]", "null"])
def test_an_mcp_json_whose_servers_are_not_an_object_is_an_error(build, servers):
    surface = build(plugin({"vendor/review/mcp.json": f'{{"mcpServers": {servers}}}'}))
    assert codes(surface) == ["agents.E024"]


def test_a_plain_plugin_json_at_the_root_is_accepted(build):
    surface = build(
        {
            "agent/extensions/review.py": PLUGIN_MOUNT,
            "vendor/review/plugin.json": '{"name": "review"}',
            "vendor/review/commands/ship.md": "Deploy now.\n",
        }
    )
    assert codes(surface) == []
    assert list(surface.skills) == ["review__ship"]


def test_a_cursor_plugin_json_is_accepted(build):
    surface = build(
        {
            "agent/extensions/review.py": PLUGIN_MOUNT,
            "vendor/review/.cursor-plugin/plugin.json": '{"name": "review"}',
            "vendor/review/commands/ship.md": "Deploy now.\n",
        }
    )
    assert codes(surface) == []
    assert list(surface.skills) == ["review__ship"]


def test_info_shows_a_plugin_mount(build):
    surface = build(plugin({"vendor/review/commands/ship.md": "Deploy now.\n"}))
    [extension] = surface.info("test")["extensions"]
    assert (extension["namespace"], extension["kind"], extension["source"]) == (
        "review",
        "plugin",
        "../../vendor/review",
    )


def test_a_plugin_disable_removes_a_contribution(build):
    surface = build(
        {
            **plugin({"vendor/review/commands/ship.md": "Deploy now.\n", "vendor/review/commands/lint.md": "Lint.\n"}),
            "agent/extensions/review.py": """
                from agents.sdk import disable_skill, plugin_mount

                plugin = plugin_mount(path="../../vendor/review", disable=[disable_skill("ship")])
            """,
        }
    )
    assert codes(surface) == []
    assert list(surface.skills) == ["review__lint"]


def test_a_plugin_folder_without_plugin_json_is_an_error(build):
    surface = build({"agent/extensions/review.py": PLUGIN_MOUNT, "vendor/review/commands/ship.md": "Deploy now.\n"})
    assert codes(surface) == ["agents.E024"]
    assert only(surface, "agents.E024").path == "agent/extensions/review.py"
    assert surface.skills == {}


@pytest.mark.parametrize("manifest", ["{not json", "[]", '{"version": "1.0.0"}', '{"name": 7}'])
def test_an_invalid_plugin_json_is_an_error(build, manifest):
    surface = build({"agent/extensions/review.py": PLUGIN_MOUNT, "vendor/review/.claude-plugin/plugin.json": manifest})
    assert codes(surface) == ["agents.E024"]
    assert only(surface, "agents.E024").path == "vendor/review/.claude-plugin/plugin.json"


def test_a_plugin_folder_that_does_not_exist_is_an_error(build):
    surface = build({"agent/extensions/review.py": PLUGIN_MOUNT})
    assert codes(surface) == ["agents.E020"]
