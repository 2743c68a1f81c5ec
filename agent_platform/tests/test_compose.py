"""docker-compose.yml: the application services restart by themselves, and the file is valid."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def test_web_worker_and_beat_are_restarted_by_docker_when_they_exit():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    policies = {name: services[name].get("restart") for name in ("web", "worker", "beat")}
    assert policies == dict.fromkeys(policies, "unless-stopped")


@pytest.mark.skipif(not shutil.which("docker-compose"), reason="needs docker-compose (validates offline)")
def test_the_compose_file_is_valid():
    checked = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
