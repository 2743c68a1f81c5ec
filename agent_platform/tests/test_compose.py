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


def test_the_worker_takes_its_pool_and_concurrency_from_settings():
    """No pool flags: a bare ``celery -A agent_platform worker`` runs PLATFORM_TURN_CONCURRENCY
    turns on one event loop (flags on the command line would override that)."""
    worker = yaml.safe_load(COMPOSE.read_text())["services"]["worker"]
    assert worker["command"][:4] == ["celery", "-A", "agent_platform", "worker"]
    assert not [arg for arg in worker["command"] if arg.startswith(("--pool", "-P", "--concurrency", "-c", "-Q"))]
    assert worker["environment"]["PLATFORM_TURN_CONCURRENCY"] == "${PLATFORM_TURN_CONCURRENCY:-100}"
