"""Agent diagnostics are Django system checks: ``manage.py check`` (and so ``runserver``
and ``migrate``) reports each broken agent of AGENTS_DIR with its id and hint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.discovery import discover
from agents.tests.trees import BROKEN_TREES, INSTRUCTIONS, write_broken_trees, write_tree

ROOT = Path(__file__).resolve().parents[2]


def manage(agents_dir: Path, tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python manage.py <arguments>`` in the embedded form, with AGENTS_DIR set."""
    env = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    env.update(AGENTS_DIR=str(agents_dir), PLATFORM_VAR_DIR=str(tmp_path / "var"))
    return subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("code", sorted(BROKEN_TREES))
def test_each_broken_tree_gives_its_error(tmp_path, code):
    folder = write_tree(tmp_path / "broken", {**INSTRUCTIONS, **BROKEN_TREES[code]})
    surface, loader = discover(folder)
    loader.unload()
    assert [d.code.id for d in surface.errors] == [code]


@pytest.mark.slow  # a manage.py process of its own
def test_manage_py_check_reports_every_broken_agent_with_its_id_and_hint(tmp_path):
    slugs = write_broken_trees(tmp_path / "agents")
    result = manage(tmp_path / "agents", tmp_path, "check")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    lines = output.splitlines()
    for slug, code in slugs.items():
        assert any(line.strip().startswith(f"{slug}/") and f"({code})" in line for line in lines), (code, output)
    assert "HINT: Fix the error at the line shown" in output  # E001's hint


@pytest.mark.slow  # a manage.py process of its own
def test_the_agent_checks_run_alone_under_their_tag(tmp_path):
    write_tree(tmp_path / "agents" / "broken", {"agent/tools/echo.py": "raise ValueError('broken')\n"})
    result = manage(tmp_path / "agents", tmp_path, "check", "--tag", "agents")
    assert result.returncode != 0
    assert "broken/agent/tools/echo.py: (agents.E001) ValueError: broken" in result.stderr


@pytest.mark.slow  # a manage.py process of its own
def test_a_clean_agents_dir_passes_and_a_warning_does_not_fail_the_check(tmp_path):
    write_tree(tmp_path / "agents" / "fine", {**INSTRUCTIONS, "agent/tools/notes.txt": "stray"})
    result = manage(tmp_path / "agents", tmp_path, "check", "--tag", "agents")
    assert result.returncode == 0, result.stderr
    assert "fine/agent/tools/notes.txt: (agents.W012)" in result.stdout + result.stderr


@pytest.mark.slow  # a manage.py process of its own
def test_the_agent_command_is_not_stopped_by_another_broken_agent(tmp_path):
    write_tree(tmp_path / "agents" / "fine", INSTRUCTIONS)
    write_tree(tmp_path / "agents" / "broken", {"agent/tools/echo.py": "raise ValueError('broken')\n"})
    result = manage(tmp_path / "agents", tmp_path, "agent", "info", "fine")
    assert result.returncode == 0, result.stderr
