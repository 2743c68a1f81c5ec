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


# The test profile: `docker compose --profile test run --rm tests` (docs/testing.md).

TEST_SERVICES = {"tests", "test-postgres", "test-redis"}


def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def test_a_plain_up_starts_no_test_service_and_the_test_profile_holds_all_three():
    in_profile = {name for name, service in services().items() if "test" in service.get("profiles", [])}
    assert in_profile == TEST_SERVICES
    assert {name for name, service in services().items() if not service.get("profiles")} == {
        "postgres",
        "redis",
        "web",
        "worker",
        "beat",
    }


def test_the_tests_run_on_a_postgres_and_a_redis_of_their_own_once_both_are_healthy():
    tests = services()["tests"]
    assert tests["depends_on"] == {
        "test-postgres": {"condition": "service_healthy"},
        "test-redis": {"condition": "service_healthy"},
    }
    assert tests["environment"]["DATABASE_URL"].startswith("postgres://postgres@test-postgres:5432/")
    assert tests["environment"]["REDIS_URL"].startswith("redis://test-redis:6379/")
    assert "restart" not in tests


def test_the_test_servers_keep_nothing_publish_nothing_and_share_nothing_with_the_deployment():
    for name in ("test-postgres", "test-redis"):
        service = services()[name]
        assert "ports" not in service and "volumes" not in service, name
        assert "healthcheck" in service, name
    assert services()["test-postgres"]["tmpfs"] == ["/var/lib/postgresql/data"]
    assert "--appendonly" in services()["test-redis"]["command"]


def test_the_tests_image_is_the_dockerfiles_test_stage_and_a_plain_build_is_still_the_app():
    assert services()["tests"]["build"] == {"context": ".", "target": "test"}
    stages = [
        line.split()[-1]
        for line in (COMPOSE.parent / "Dockerfile").read_text().splitlines()
        if line.startswith("FROM ")
    ]
    assert "test" in stages
    assert stages[-1] == "app"


@pytest.mark.skipif(not shutil.which("docker-compose"), reason="needs docker-compose (validates offline)")
def test_the_compose_file_is_valid_with_the_test_profile():
    checked = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "--profile", "test", "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
