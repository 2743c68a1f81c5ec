"""Which agents run in the sandbox (``PLATFORM["SANDBOX"]``), and what a sandboxed agent is
where the sandbox cannot run."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.models import Agent, AgentSource
from agents.registry import is_sandboxed
from agents.sandbox import bwrap_path, sandboxed_surface, validate_in_sandbox
from agents.sandbox import process as sandbox_process
from agents.tests.sandbox.trees import MISBEHAVING
from agents.tests.trees import write_tree

DIRECTORY = Agent(slug="shared", source=AgentSource.DIRECTORY)
DEPLOYED = Agent(slug="theirs", source=AgentSource.DEPLOYMENT)


@pytest.mark.parametrize(
    ("mode", "dev", "directory", "deployed"),
    [("untrusted", False, False, True), ("always", False, True, True), ("off", True, False, False)],
)
def test_the_setting_picks_the_sandboxed_agents(settings, mode, dev, directory, deployed):
    settings.PLATFORM = {**settings.PLATFORM, "SANDBOX": mode, "DEV": dev}
    assert (is_sandboxed(DIRECTORY), is_sandboxed(DEPLOYED)) == (directory, deployed)


@pytest.mark.parametrize("mode", ["off", "sometimes"])
def test_off_outside_dev_mode_and_unknown_values_are_refused(settings, mode):
    settings.PLATFORM = {**settings.PLATFORM, "SANDBOX": mode, "DEV": False}
    with pytest.raises(ImproperlyConfigured, match="SANDBOX"):
        is_sandboxed(DEPLOYED)


def test_without_bubblewrap_a_sandboxed_tree_is_not_served_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_process, "bwrap_path", lambda: None)
    monkeypatch.setattr("agents.sandbox.surface.bwrap_path", lambda: None)
    surface, _ = sandboxed_surface(write_tree(tmp_path / "theirs", MISBEHAVING), "theirs")
    [diagnostic] = surface.errors
    assert diagnostic.code.id == "agents.E050"
    assert "bubblewrap (bwrap) is not installed" in diagnostic.message
    assert surface.tools == {}


def test_validate_in_sandbox_gives_the_diagnostics_agent_validate_prints(tmp_path):
    if bwrap_path() is None:
        pytest.skip("the sandbox needs bubblewrap")
    broken = write_tree(tmp_path / "broken", {**MISBEHAVING, "agent/tools/bad.py": "import nothing_such\n"})
    [diagnostic] = validate_in_sandbox(broken)
    assert diagnostic["code"] == "agents.E001" and diagnostic["severity"] == "error"
    assert diagnostic["path"].endswith("tools/bad.py") and "nothing_such" in diagnostic["message"]
    assert set(diagnostic) == {"severity", "code", "path", "message", "hint"}
