"""The synthesized tool set: specs for every tool, and the agent's ``tools=[...]`` allow-list."""

from __future__ import annotations

import pytest

from agents.runtime.fs.tools import FILE_TOOL_NAMES, FILE_TOOL_SPECS, select_file_tools

ALL = ["Read", "LS", "Glob", "Grep", "Write", "StrReplace", "Delete", "SemanticSearch"]


def test_without_an_allow_list_every_file_tool_is_offered():
    assert select_file_tools(None) == ALL
    assert list(FILE_TOOL_NAMES) == ALL


def test_an_allow_list_keeps_only_the_named_tools_in_a_stable_order():
    assert select_file_tools(["Grep", "Read", "Read"]) == ["Read", "Grep"]
    assert select_file_tools([]) == []


def test_an_allow_list_naming_an_unknown_tool_is_refused():
    with pytest.raises(ValueError, match=r"unknown file tools \['Bash', 'read'\]"):
        select_file_tools(["Read", "read", "Bash"])


@pytest.mark.parametrize("name", ALL)
def test_each_tool_has_a_description_and_an_object_schema(name):
    description, schema = FILE_TOOL_SPECS[name]
    assert description
    assert schema["type"] == "object"
    assert set(schema["required"]) <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_str_replace_takes_the_argument_names_its_errors_mention():
    _, schema = FILE_TOOL_SPECS["StrReplace"]
    assert set(schema["properties"]) == {"path", "oldText", "newText", "replace_all"}
