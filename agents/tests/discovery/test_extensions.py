"""extensions/<ns>.py and extensions/<ns>/: mounted trees whose contributions join as <ns>__<name>."""

from __future__ import annotations

import pytest

from agents.tests.trees import codes, only, write_tree

MOUNT = """
    from agents.sdk import mount

    extension = mount("../../vendor/crm")
"""
TOOL = '''
    from agents.sdk import tool


    @tool
    def f(customer_id: str) -> str:
        """{doc}"""
        return customer_id
'''
LOOKUP = TOOL.format(doc="Look a customer up.")
REFUND = TOOL.format(doc="Refund a customer.")
EXTENSION_ARTIFACTS = "from agents.sdk import define_artifacts\n\na = define_artifacts(kinds=['ticket'])\n"
CONFIGURED = """
    from pydantic import BaseModel

    from agents.sdk import define_extension


    class Config(BaseModel):
        region: str
        limit: int = 10


    extension = define_extension(name="crm", config=Config)
"""


def mount_with(arguments: str, *, imports: str = "mount") -> str:
    return f'from agents.sdk import {imports}\n\nextension = mount("../../vendor/crm"{arguments})\n'


# --- what joins the agent ---------------------------------------------------------------------

CONTRIBUTIONS = {
    "tools": ("tools/lookup.py", LOOKUP, "crm__lookup"),
    "skills": ("skills/escalate.md", "---\ndescription: Escalate.\n---\nCall a human.\n", "crm__escalate"),
    "hooks": (
        "hooks/audit/usage.py",
        "from agents.sdk import define_hook\n\nhook = define_hook(events={'*': lambda event, ctx: None})\n",
        "crm__audit/usage",
    ),
    "channels": (
        "channels/inbox.py",
        "from agents.sdk import define_channel\n\nchannel = define_channel()\n",
        "crm__inbox",
    ),
    "schedules": ("schedules/sync.md", "---\ncron: '0 * * * *'\n---\nSync accounts.\n", "crm__sync"),
    "subagents": (
        "subagents/helper/agent.py",
        "from agents.sdk import define_agent\n\nagent = define_agent(description='Helps.')\n",
        "crm__helper",
    ),
    "mcp_connections": (
        "mcp-connections/api.py",
        "from agents.sdk import define_mcp_connection\n\nc = define_mcp_connection(url='https://crm.example.com/mcp')\n",
        "crm__api",
    ),
    "host_connections": (
        "host-connections/db.py",
        "from agents.sdk import define_mcp_connection\n\nc = define_mcp_connection(command='crm-db')\n",
        "crm__db",
    ),
    "experiments": (
        "ab/tone.py",
        "from agents.sdk import define_ab\n\nexperiment = define_ab(arms=['a', 'b'])\n",
        "crm__tone",
    ),
}


@pytest.mark.parametrize("registry", list(CONTRIBUTIONS))
def test_each_contribution_joins_the_agent_under_its_namespace(build, registry):
    relative, text, expected = CONTRIBUTIONS[registry]
    surface = build({"agent/extensions/crm.py": MOUNT, f"vendor/crm/{relative}": text})
    assert codes(surface) == []
    assert list(getattr(surface, registry)) == [expected]


def test_an_extensions_default_experiment_is_prefixed_too(build):
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT,
            "vendor/crm/ab.py": "from agents.sdk import define_ab\n\nexperiment = define_ab(arms=['a', 'b'])\n",
        }
    )
    assert list(surface.experiments) == ["crm__ab"]


def test_a_mounted_tool_is_renamed_and_remembers_its_extension(build):
    surface = build({"agent/extensions/crm.py": MOUNT, "vendor/crm/tools/lookup.py": LOOKUP})
    entry = surface.tools["crm__lookup"]
    assert entry.value.name == "crm__lookup"
    assert entry.extension == "crm"
    assert surface.info("test")["tools"][0]["extension"] == "crm"


def test_an_extensions_instructions_are_appended_after_the_agents_own(build):
    surface = build({"agent/extensions/crm.py": MOUNT, "vendor/crm/instructions.md": "Never share account numbers."})
    assert [(entry.value.text, entry.extension) for entry in surface.instructions] == [
        ("You help people.", None),
        ("Never share account numbers.", "crm"),
    ]


def test_an_extensions_instructions_do_not_stand_in_for_the_agents_own(build):
    surface = build(
        {"agent/extensions/crm.py": MOUNT, "vendor/crm/instructions.md": "Never share account numbers."},
        instructions=False,
    )
    assert codes(surface) == ["agents.E007"]


def test_artifact_kinds_of_an_extension_are_prefixed_and_merged_with_the_agents(build):
    surface = build(
        {
            "agent/artifacts.py": "from agents.sdk import define_artifacts\n\na = define_artifacts(kinds=['note'])\n",
            "agent/extensions/crm.py": MOUNT,
            "vendor/crm/artifacts.py": EXTENSION_ARTIFACTS,
        }
    )
    assert codes(surface) == []
    assert list(surface.artifacts.kinds) == ["note", "crm__ticket"]


def test_seeds_are_merged_and_the_agents_own_seed_wins(build):
    surface = build(
        {
            "agent/sandbox/workspace/shared.txt": "the agent's",
            "agent/extensions/crm.py": MOUNT,
            "vendor/crm/sandbox/workspace/shared.txt": "the extension's",
            "vendor/crm/sandbox/workspace/crm.txt": "only the extension's",
        }
    )
    assert codes(surface) == []
    assert sorted(surface.seeds) == ["crm.txt", "shared.txt"]
    assert surface.seeds["shared.txt"].read_text() == "the agent's"


def test_info_lists_what_each_mount_contributed(build):
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT,
            "vendor/crm/tools/lookup.py": LOOKUP,
            "vendor/crm/instructions.md": "Be careful.",
        }
    )
    [extension] = surface.info("test")["extensions"]
    assert extension["namespace"] == "crm"
    assert extension["kind"] == "extension"
    assert extension["source"] == "../../vendor/crm"
    assert extension["package"] is None  # a folder, not an installed package
    assert extension["contributions"]["tools"] == ["crm__lookup"]
    assert extension["contributions"]["instructions"] == ["instructions.md"]
    assert (extension["disabled"], extension["overridden"]) == ([], [])


def test_an_extension_may_use_double_underscores_in_its_names(build):
    surface = build({"agent/extensions/crm.py": MOUNT, "vendor/crm/tools/look__up.py": LOOKUP})
    assert codes(surface) == []
    assert list(surface.tools) == ["crm__look__up"]


def test_a_namespace_with_double_underscores_is_an_error(build):
    surface = build({"agent/extensions/c__rm.py": MOUNT, "vendor/crm/tools/lookup.py": LOOKUP})
    assert codes(surface) == ["agents.E005"]
    assert surface.tools == {}


def test_an_extensions_own_diagnostics_reach_the_agent(build):
    surface = build({"agent/extensions/crm.py": MOUNT, "vendor/crm/tools/Read.py": LOOKUP})
    assert codes(surface) == ["agents.E006"]
    assert only(surface, "agents.E006").path == "vendor/crm/tools/Read.py"


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        ("agent.py", "from agents.sdk import define_agent\n\nagent = define_agent(model='test')\n"),
        ("storage.py", "from agents.sdk import define_storage\n\nstorage = define_storage()\n"),
        ("otel.py", "from agents.sdk import define_otel\n\notel = define_otel()\n"),
        ("ab.config.py", "from agents.sdk import define_ab_config\n\nconfig = define_ab_config()\n"),
        ("playground/tools/lookup.html", "<pre></pre>"),
    ],
)
def test_an_extension_carrying_an_agent_only_path_is_warned_and_the_path_ignored(build, relative, text):
    surface = build({"agent/extensions/crm.py": MOUNT, f"vendor/crm/{relative}": text})
    assert codes(surface) == ["agents.W023"]
    assert only(surface, "agents.W023").path == f"vendor/crm/{relative.split('/')[0]}"
    assert (surface.storage, surface.otel, surface.ab_config, surface.playground_tools) == (None, None, None, {})


# --- overrides and disables -------------------------------------------------------------------


def test_a_mount_folder_file_overrides_the_contribution_of_the_same_name(build):
    surface = build(
        {
            "agent/extensions/crm/extension.py": 'from agents.sdk import mount\n\nm = mount("../../../vendor/crm")\n',
            "agent/extensions/crm/tools/lookup.py": TOOL.format(doc="Look a customer up, politely."),
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == []
    assert surface.tools["crm__lookup"].value.description == "Look a customer up, politely."
    assert surface.info("test")["extensions"][0]["overridden"] == ["tool:lookup"]


def test_overriding_something_the_extension_lacks_is_an_error(build):
    surface = build(
        {
            "agent/extensions/crm/extension.py": 'from agents.sdk import mount\n\nm = mount("../../../vendor/crm")\n',
            "agent/extensions/crm/tools/ghost.py": TOOL.format(doc="Not in the extension."),
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == ["agents.E025"]
    assert only(surface, "agents.E025").path == "agent/extensions/crm/tools/ghost.py"
    assert list(surface.tools) == ["crm__lookup"]


def test_instructions_in_a_mount_folder_are_ignored_with_a_warning(build):
    surface = build(
        {
            "agent/extensions/crm/extension.py": 'from agents.sdk import mount\n\nm = mount("../../../vendor/crm")\n',
            "agent/extensions/crm/instructions.md": "Replacement rules.",
            "vendor/crm/instructions.md": "CRM rules.",
        }
    )
    assert codes(surface) == ["agents.W016"]
    assert only(surface, "agents.W016").path == "agent/extensions/crm/instructions.md"
    assert [entry.value.text for entry in surface.instructions] == ["You help people.", "CRM rules."]


def test_disable_tool_removes_the_contribution(build):
    surface = build(
        {
            "agent/extensions/crm.py": mount_with(', disable=[disable_tool("refund")]', imports="disable_tool, mount"),
            "vendor/crm/tools/lookup.py": LOOKUP,
            "vendor/crm/tools/refund.py": REFUND,
        }
    )
    assert codes(surface) == []
    assert list(surface.tools) == ["crm__lookup"]
    assert surface.info("test")["extensions"][0]["disabled"] == ["tool:refund"]


def test_disable_instructions_and_artifacts_remove_them(build):
    surface = build(
        {
            "agent/extensions/crm.py": mount_with(
                ", disable=[disable_instructions(), disable_artifacts()]",
                imports="disable_artifacts, disable_instructions, mount",
            ),
            "vendor/crm/instructions.md": "Be careful.",
            "vendor/crm/artifacts.py": EXTENSION_ARTIFACTS,
        }
    )
    assert codes(surface) == []
    assert [entry.extension for entry in surface.instructions] == [None]
    assert surface.artifacts is None


def test_disabling_a_name_the_extension_lacks_is_an_error(build):
    surface = build(
        {
            "agent/extensions/crm.py": mount_with(', disable=[disable_tool("ghost")]', imports="disable_tool, mount"),
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == ["agents.E022"]
    assert "'ghost'" in only(surface, "agents.E022").message


def test_a_mount_folder_without_extension_py_is_an_error(build):
    surface = build({"agent/extensions/crm/tools/lookup.py": LOOKUP})
    assert codes(surface) == ["agents.E002"]


def test_a_mount_file_with_another_helper_is_an_error(build):
    surface = build({"agent/extensions/crm.py": "from agents.sdk import define_otel\n\notel = define_otel()\n"})
    assert codes(surface) == ["agents.E004"]


def test_a_namespace_mounted_twice_is_an_error(build):
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT,
            "agent/extensions/crm/extension.py": 'from agents.sdk import mount\n\nm = mount("../../../vendor/crm")\n',
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == ["agents.E019"]


# --- sources ----------------------------------------------------------------------------------


def test_a_mount_whose_folder_does_not_exist_is_an_error(build):
    surface = build({"agent/extensions/crm.py": MOUNT})
    assert codes(surface) == ["agents.E020"]
    assert "'../../vendor/crm'" in only(surface, "agents.E020").message
    assert "pip install" not in only(surface, "agents.E020").message  # a path, not a package


def test_a_mount_of_a_package_that_is_not_installed_is_an_error(build):
    surface = build({"agent/extensions/crm.py": 'from agents.sdk import mount\n\nm = mount("no_such_crm_package")\n'})
    assert codes(surface) == ["agents.E020"]
    assert "no such package is installed: pip install it" in only(surface, "agents.E020").message


def test_an_installed_package_is_mounted_by_its_name(build, tmp_path, monkeypatch):
    write_tree(
        tmp_path / "site",
        {"discovery_test_crm_pkg/__init__.py": "", "discovery_test_crm_pkg/tools/lookup.py": LOOKUP},
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    surface = build(
        {"agent/extensions/crm.py": 'from agents.sdk import mount\n\nm = mount("discovery_test_crm_pkg")\n'}
    )
    assert codes(surface) == []
    assert list(surface.tools) == ["crm__lookup"]


# --- config -----------------------------------------------------------------------------------


def test_a_mount_config_that_fits_the_extensions_model_is_accepted(build):
    surface = build(
        {
            "agent/extensions/crm.py": mount_with(', config={"region": "eu"}'),
            "vendor/crm/extension.py": CONFIGURED,
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == []
    assert list(surface.tools) == ["crm__lookup"]
    # What ctx.extension.config will be: the validated config, defaults filled in.
    assert surface.extensions["crm"].config == {"region": "eu", "limit": 10}


def test_a_mount_config_missing_a_required_field_is_an_error(build):
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT,
            "vendor/crm/extension.py": CONFIGURED,
            "vendor/crm/tools/lookup.py": LOOKUP,
        }
    )
    assert codes(surface) == ["agents.E021"]
    assert "region" in only(surface, "agents.E021").message
    assert surface.tools == {}


def test_a_mount_config_with_a_mistyped_field_is_an_error(build):
    surface = build(
        {
            "agent/extensions/crm.py": mount_with(', config={"region": "eu", "limit": "lots"}'),
            "vendor/crm/extension.py": CONFIGURED,
        }
    )
    assert codes(surface) == ["agents.E021"]
    assert "limit" in only(surface, "agents.E021").message


def test_a_mount_config_for_an_extension_that_declares_none_is_an_error(build):
    surface = build(
        {"agent/extensions/crm.py": mount_with(', config={"region": "eu"}'), "vendor/crm/tools/lookup.py": LOOKUP}
    )
    assert codes(surface) == ["agents.E021"]
    assert "takes no config" in only(surface, "agents.E021").message
