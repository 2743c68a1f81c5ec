"""The Makefile's installs: the first ``make run`` shows pip's progress instead of a silent
minute; ``make test``'s install stays quiet for CI logs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned(target: str) -> list[str]:
    """The pip commands ``make`` would run for ``target`` from scratch (``-n -B``: nothing runs)."""
    if not shutil.which("make"):
        pytest.skip("needs make")
    answer = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True
    )
    return answer.stdout.splitlines()


def test_the_first_make_run_says_it_installs_and_shows_pips_progress():
    lines = planned(".venv/.run-installed")
    [install] = [line for line in lines if "pip install" in line and "-r requirements.txt" in line]
    assert "--quiet" not in install and "--progress-bar on" in install
    assert any("takes a minute" in line for line in lines)


def test_the_test_install_stays_quiet():
    [install] = [line for line in planned(".venv/.dev-installed") if "-r requirements-dev.txt" in line]
    assert "--quiet" in install
