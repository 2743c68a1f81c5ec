"""The slot table is the one place a slot is declared: every part of discovery that
must know a slot is derived from it, and these guards fail when a row is missing or
incomplete (see CONTRIBUTING.md, "Adding an authoring slot")."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from agents import sdk
from agents.discovery import AgentSurface, extensions
from agents.discovery.discover import WALKERS
from agents.discovery.loader import DEFINITION_TYPES
from agents.discovery.slots import DISABLE_KINDS, EXTENSIBLE, IN_TREE, KNOWN_ENTRIES, SLOTS, Slot, WalkKind
from agents.sdk._extensions import ContributionKind
from agents.tests.trees import codes

# AgentSurface fields that are no slot: who the agent is, and what discovery found wrong.
NOT_SLOTS = {"slug", "path", "diagnostics"}

MOUNT = 'from agents.sdk import {imports}\n\nextension = mount("../../vendor/crm"{arguments})\n'

TOOL = 'from agents.sdk import tool\n\n\n@tool\ndef f(q: str) -> str:\n    """Look up."""\n    return q\n'
CONNECTION = "from agents.sdk import define_mcp_connection\n\nc = define_mcp_connection(command='docs')\n"
SUBAGENT = "from agents.sdk import define_agent\n\nagent = define_agent(description='Finds.')\n"

# One contribution per extensible slot, by the slot's first path: (files of the extension,
# the name it contributes, as disable_<kind>() names it).
EXTENSION_FILES: dict[str, tuple[dict[str, str], str]] = {
    "instructions.md": ({"instructions.md": "Mention the CRM."}, "instructions"),
    "tools": (
        {"tools/lookup.py": TOOL},
        "lookup",
    ),
    "skills": ({"skills/escalate.md": "---\ndescription: Escalate.\n---\nCall a human.\n"}, "escalate"),
    "mcp-connections": (
        {"mcp-connections/docs.py": CONNECTION},
        "docs",
    ),
    "host-connections": (
        {"host-connections/docs.py": CONNECTION},
        "docs",  # the same name as the MCP connection: disable_connection() removes both
    ),
    "channels": (
        {"channels/inbox.py": "from agents.sdk import define_channel\n\nchannel = define_channel()\n"},
        "inbox",
    ),
    "hooks": (
        {"hooks/audit.py": "from agents.sdk import define_hook\n\nhook = define_hook(events={'*': print})\n"},
        "audit",
    ),
    "schedules": ({"schedules/sync.md": "---\ncron: '0 * * * *'\n---\nSync accounts.\n"}, "sync"),
    "ab.py": ({"ab.py": "from agents.sdk import define_ab\n\nab = define_ab(arms=['a', 'b'])\n"}, "ab"),
    "artifacts.py": (
        {"artifacts.py": "from agents.sdk import define_artifacts\n\na = define_artifacts(kinds=['ticket'])\n"},
        "artifacts",
    ),
    "sandbox": ({"sandbox/workspace/notes.txt": "CRM notes"}, "notes.txt"),
    "subagents": (
        {"subagents/finder/agent.py": SUBAGENT},
        "finder",
    ),
}


def contributed(surface: AgentSurface, slot: Slot, name: str) -> bool:
    """Whether the extension ``crm``'s contribution ``name`` to ``slot`` joined the agent."""
    value = getattr(surface, slot.field)
    if slot.shape == "named":
        return f"crm__{name}" in value
    if slot.shape == "list":
        return any(entry.extension == "crm" for entry in value)
    if slot.shape == "files":
        return name in value
    return value is not None and any(kind.startswith("crm__") for kind in value.kinds)


def test_every_field_of_the_surface_belongs_to_exactly_one_slot():
    fields = [field.name for field in dataclasses.fields(AgentSurface) if field.name not in NOT_SLOTS]
    covered = [name for slot in SLOTS for name in slot.fields]
    assert sorted(covered) == sorted(fields)


def test_every_walk_kind_has_a_walker():
    walks = {slot.walk for slot in SLOTS}
    assert walks == set(typing.get_args(WalkKind))
    assert walks == set(WALKERS) | {"extensions", "evals"}


def test_every_definition_type_of_a_slot_is_one_discovery_finds():
    for slot in SLOTS:
        types = slot.definition if isinstance(slot.definition, tuple) else (slot.definition,)
        assert all(kind is None or kind in DEFINITION_TYPES for kind in types), slot


def test_every_helper_of_a_slot_is_in_the_sdk():
    for slot in SLOTS:
        if slot.helper is not None:
            assert slot.helper.lstrip("@") in sdk.__all__, slot


def test_every_info_key_of_a_slot_is_in_the_info_document(build):
    document = build({}).info("test")
    for slot in SLOTS:
        if slot.info_key is not None:
            assert slot.info_key in document, slot


def test_the_known_entries_are_the_slot_paths():
    assert {path for slot in IN_TREE for path in slot.paths} <= KNOWN_ENTRIES


def test_the_disable_kinds_are_the_sdk_kinds_and_each_has_its_helper():
    assert set(DISABLE_KINDS) == set(typing.get_args(ContributionKind))
    for kind in DISABLE_KINDS:
        helper = getattr(sdk, f"disable_{kind}")
        disable = helper() if kind in {"instructions", "artifacts"} else helper("x")
        assert disable.kind == kind


def test_every_extensible_slot_that_is_not_a_registry_has_a_merge():
    assert set(extensions._MERGE_WHOLE) == {slot.field for slot in EXTENSIBLE if slot.shape != "named"}


@pytest.mark.parametrize("slot", EXTENSIBLE, ids=lambda slot: slot.paths[0])
def test_an_extension_contributes_to_every_extensible_slot(build, slot):
    assert slot.paths[0] in EXTENSION_FILES, f"add an example contribution for the slot {slot.paths[0]!r}"
    files, name = EXTENSION_FILES[slot.paths[0]]
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT.format(imports="mount", arguments=""),
            **{f"vendor/crm/{path}": text for path, text in files.items()},
        }
    )
    assert codes(surface) == []
    assert contributed(surface, slot, name)
    assert surface.extensions["crm"].contributed


@pytest.mark.parametrize("kind", sorted(DISABLE_KINDS))
def test_disable_of_every_kind_removes_the_contribution(build, kind):
    slots = DISABLE_KINDS[kind]
    files = {path: text for slot in slots for path, text in EXTENSION_FILES[slot.paths[0]][0].items()}
    name = EXTENSION_FILES[slots[0].paths[0]][1]
    argument = "" if kind in {"instructions", "artifacts"} else repr(name)
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT.format(
                imports=f"disable_{kind}, mount", arguments=f", disable=[disable_{kind}({argument})]"
            ),
            **{f"vendor/crm/{path}": text for path, text in files.items()},
        }
    )
    assert codes(surface) == []
    assert not any(contributed(surface, slot, EXTENSION_FILES[slot.paths[0]][1]) for slot in slots)
    assert surface.extensions["crm"].disabled == [f"{kind}:{name}"]


def test_a_disable_of_an_unknown_kind_is_a_diagnostic_not_a_crash(build):
    surface = build(
        {
            "agent/extensions/crm.py": (
                "from agents.sdk import Disable, mount\n\n"
                "extension = mount('../../vendor/crm', disable=[Disable('widget', 'x')])\n"
            ),
            **{f"vendor/crm/{path}": text for path, text in EXTENSION_FILES["tools"][0].items()},
        }
    )
    assert codes(surface) == ["agents.E022"]


def test_an_extension_carrying_a_slot_only_the_agent_has_is_warned(build):
    surface = build(
        {
            "agent/extensions/crm.py": MOUNT.format(imports="mount", arguments=""),
            "vendor/crm/result.py": "from agents.sdk import define_result\n\nresult = define_result(commit=print)\n",
        }
    )
    assert codes(surface) == ["agents.W023"]
    assert surface.result is None


def test_a_subagent_with_a_slot_only_the_root_has_is_warned(build):
    surface = build(
        {
            "agent/subagents/finder/agent.py": SUBAGENT,
            "agent/subagents/finder/extensions/crm.py": MOUNT.format(imports="mount", arguments=""),
        }
    )
    assert codes(surface) == ["agents.W016"]
