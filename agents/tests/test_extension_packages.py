"""Extensions published as Python packages, found through the entry point group."""

from __future__ import annotations

from agents.discovery import discover
from agents.discovery.extensions import ENTRY_POINT_GROUP
from agents.tests.trees import INSTRUCTIONS, write_tree

TOOL = '''
from agents.sdk import tool


@tool
def lookup(customer: str) -> dict:
    """Find a customer."""
    return {"customer": customer}
'''


def test_an_extension_is_mounted_by_its_entry_point_name(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "crm_tools/__init__.py": "",
            "crm_tools/tools/lookup.py": TOOL,
            "crm_tools/skills/escalate.md": "---\ndescription: When to escalate\n---\nEscalate after two tries.",
            "crm_tools-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: crm-tools\nVersion: 1.0\n",
            "crm_tools-1.0.dist-info/entry_points.txt": f"[{ENTRY_POINT_GROUP}]\ncrm = crm_tools\n",
        },
    )
    monkeypatch.syspath_prepend(str(site))
    agent = write_tree(
        tmp_path / "agent",
        {**INSTRUCTIONS, "agent/extensions/crm.py": 'from agents.sdk import mount\n\ncrm = mount("crm")\n'},
    )
    surface, _ = discover(agent)
    assert [str(d) for d in surface.all_diagnostics()] == []
    assert list(surface.tools) == ["crm__lookup"]
    assert surface.tools["crm__lookup"].value.name == "crm__lookup"
    assert list(surface.skills) == ["crm__escalate"]
    assert surface.extensions["crm"].source == "crm"
    [info] = surface.info("test")["extensions"]
    assert (info["kind"], info["package"]) == ("extension", {"name": "crm-tools", "version": "1.0"})
