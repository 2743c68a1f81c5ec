"""docker-compose.yml: the application services restart by themselves, the file is valid,
it refuses to run without its secrets, migrates once before any replica starts, mounts
the agents, and serves through a proxy that keeps streams open."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sessions_app.queues import QueueKind, queue_name

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
CADDYFILE = COMPOSE.parent / "deploy" / "Caddyfile"
SECRETS = {
    "SECRET_KEY": "not-a-real-secret",
    "POSTGRES_PASSWORD": "not-a-real-password",
    "APP_DB_PASSWORD": "not-a-real-app-password",
}
NO_COMPOSE = "needs docker-compose (validates offline)"
needs_compose = pytest.mark.skipif(not shutil.which("docker-compose"), reason=NO_COMPOSE)


def compose(*args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    """``docker-compose -f docker-compose.yml ARGS`` with only PATH and ``environ`` set."""
    env = {"PATH": os.environ.get("PATH", ""), **environ}
    command = ["docker-compose", "-f", str(COMPOSE), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=COMPOSE.parent)


APP_SERVICES = ("web", "worker", "schedules-worker", "beat")


def test_web_workers_and_beat_are_restarted_by_docker_when_they_exit():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    policies = {name: services[name].get("restart") for name in APP_SERVICES}
    assert policies == dict.fromkeys(policies, "unless-stopped")


@needs_compose
def test_the_compose_file_is_valid():
    checked = compose("config", "-q", **SECRETS)
    assert checked.returncode == 0, checked.stderr


@needs_compose
@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_run_without_each_secret(missing):
    checked = compose("config", "-q", **{name: value for name, value in SECRETS.items() if name != missing})
    assert checked.returncode != 0
    assert f"set {missing}" in checked.stderr


def test_the_worker_takes_its_pool_and_concurrency_from_settings():
    """No pool flags: a bare ``celery -A agent_platform worker`` runs PLATFORM_TURN_CONCURRENCY
    turns on one event loop (flags on the command line would override that)."""
    worker = yaml.safe_load(COMPOSE.read_text())["services"]["worker"]
    assert worker["command"][:4] == ["celery", "-A", "agent_platform", "worker"]
    assert not [arg for arg in worker["command"] if arg.startswith(("--pool", "-P", "--concurrency", "-c", "-Q"))]
    assert worker["environment"]["PLATFORM_TURN_CONCURRENCY"] == "${PLATFORM_TURN_CONCURRENCY:-100}"


def test_schedules_and_eval_runs_have_a_worker_of_their_own_and_every_other_queue_the_worker():
    """The turns' worker leaves out (-X) exactly the schedules queue, which the second
    worker serves alone (-Q): between them every queue is served, none twice."""
    schedules = queue_name("celery", QueueKind.SCHEDULES)
    worker, scheduler = services()["worker"], services()["schedules-worker"]
    assert worker["command"][-2:] == ["-X", schedules]
    assert scheduler["command"] == [*worker["command"][:-2], "-Q", schedules]
    assert scheduler["environment"] == worker["environment"]
    assert scheduler["volumes"] == worker["volumes"]


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
        "migrate",
        "web",
        "worker",
        "schedules-worker",
        "beat",
        "proxy",
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


@needs_compose
def test_the_compose_file_is_valid_with_the_test_profile():
    checked = compose("--profile", "test", "config", "-q", **SECRETS)
    assert checked.returncode == 0, checked.stderr


# Deployable: one migration, scalable web, agents mounted, variables passed through, a proxy.


@functools.cache
def resolved() -> dict:
    """The services as compose resolves them (anchors merged, variables substituted); one
    ``docker-compose config`` for the module."""
    if not shutil.which("docker-compose"):
        pytest.skip(NO_COMPOSE)
    checked = compose("config", **SECRETS, AGENTS_DIR="/srv/agents", OTEL_EXPORTER_OTLP_ENDPOINT="http://otel:4318")
    assert checked.returncode == 0, checked.stderr
    return yaml.safe_load(checked.stdout)["services"]


def test_one_migrate_runs_once_and_every_app_service_waits_for_it_to_succeed():
    services = resolved()
    migrate = services["migrate"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no"
    for name in APP_SERVICES:
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
        assert "migrate" not in " ".join(services[name]["command"]), name


def test_web_publishes_no_port_so_it_scales_and_the_proxy_is_the_way_in():
    assert "ports" not in resolved()["web"]
    proxy = services()["proxy"]
    assert proxy["depends_on"] == {"web": {"condition": "service_healthy"}}
    # Loopback unless PUBLISH_ADDRESS says otherwise.
    assert proxy["ports"] and all(port.startswith("${PUBLISH_ADDRESS:-127.0.0.1}:") for port in proxy["ports"])


def test_the_agents_are_a_read_only_bind_mount_of_agents_dir():
    services = resolved()
    for name in ("migrate", *APP_SERVICES):
        service = services[name]
        assert service["environment"]["AGENTS_DIR"] == "/agents", name
        assert "/srv/agents:/agents:ro" in service["volumes"], name


def test_secrets_come_from_the_environment_and_provider_and_otel_variables_pass_through():
    web = resolved()["web"]["environment"]
    assert web["SECRET_KEY"] == SECRETS["SECRET_KEY"]
    assert f"agent_platform_app:{SECRETS['APP_DB_PASSWORD']}@postgres:" in web["DATABASE_URL"]
    assert web["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel:4318"
    # Unset on this machine: passed as unset (null), not as an empty string.
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME"):
        assert name in web and web[name] is None, name


def test_the_proxy_limits_bodies_and_keeps_streams_open_and_unbuffered():
    caddyfile = CADDYFILE.read_text()
    proxy = services()["proxy"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    for directive in ("max_size {$PROXY_MAX_BODY:2MB}", "flush_interval -1", "read_timeout 0", "stream_close_delay"):
        assert directive in caddyfile, directive
    assert "dynamic a" in caddyfile and "name web" in caddyfile  # every web replica
    # Its health probe names a host the platform always allows (a replica's IP is not one).
    assert "Host localhost" in caddyfile
    assert resolved()["web"]["environment"]["ALLOWED_HOSTS"].startswith("localhost,127.0.0.1,")


def test_the_app_image_serves_the_mounted_agents():
    dockerfile = (COMPOSE.parent / "Dockerfile").read_text()
    app_stage = dockerfile[dockerfile.index("FROM base AS app") :]
    assert "AGENTS_DIR=/agents" in app_stage
