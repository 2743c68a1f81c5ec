"""The environment picks the form: embedded with nothing set, distributed with
DATABASE_URL and REDIS_URL. Each case loads the settings in a fresh interpreter
with exactly that environment, as a deployment would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "options": {k: str(v) for k, v in db.get("OPTIONS", {}).items()},
    "broker": settings.CELERY_BROKER_URL, "layer": settings.CHANNEL_LAYERS["default"],
    "dev": settings.PLATFORM["DEV"], "embedded_worker": settings.PLATFORM["EMBEDDED_WORKER"],
    "debug": settings.DEBUG, "beat": settings.CELERY_BEAT_SCHEDULER,
    "acks_late": settings.CELERY_TASK_ACKS_LATE, "reject_on_lost": settings.CELERY_TASK_REJECT_ON_WORKER_LOST,
    "prefetch": settings.CELERY_WORKER_PREFETCH_MULTIPLIER,
    "visibility_timeout": settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"],
    "time_limit": settings.CELERY_TASK_TIME_LIMIT,
}))
"""


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key in {"PATH", "HOME", "LANG"}}
    clean.update({"DJANGO_SETTINGS_MODULE": "agent_platform.settings", "PLATFORM_VAR_DIR": str(tmp_path)}, **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60, check=False
    )


def test_with_nothing_set_the_platform_runs_embedded(tmp_path):
    result = load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert config["engine"] == "django.db.backends.sqlite3"
    assert config["name"] == str(tmp_path / "db.sqlite3")
    assert "journal_mode=WAL" in config["options"]["init_command"]
    assert config["options"]["transaction_mode"] == "IMMEDIATE"
    assert float(config["options"]["timeout"]) > 0
    assert config["broker"].startswith("memory://")
    assert config["layer"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert config["dev"] is True and config["embedded_worker"] is True
    assert config["debug"] is False
    # A key was generated under var/, not taken from the repository.
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_with_database_and_redis_urls_the_platform_runs_distributed(tmp_path):
    result = load_settings(
        tmp_path,
        DATABASE_URL="postgres://app:pw@db.internal:5432/platform",
        REDIS_URL="redis://redis.internal:6379",
        SECRET_KEY="s3cret-from-the-environment",
    )
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert config["engine"] == "agent_platform.postgres"  # Django's, with the pool's cheaper check
    assert config["name"] == "platform"
    assert "lock_timeout" in config["options"]["options"]
    assert config["broker"] == "redis://redis.internal:6379/0"
    assert config["layer"]["BACKEND"] == "channels_redis.pubsub.RedisPubSubChannelLayer"
    assert config["layer"]["CONFIG"]["hosts"] == ["redis://redis.internal:6379/1"]
    assert config["dev"] is False and config["embedded_worker"] is False
    assert config["beat"] == "django_celery_beat.schedulers:DatabaseScheduler"
    assert config["acks_late"] and config["reject_on_lost"] and config["prefetch"] == 1
    assert config["visibility_timeout"] > config["time_limit"]
    assert not (tmp_path / "secret_key").exists()


def test_the_distributed_form_refuses_to_start_without_a_secret_key(tmp_path):
    result = load_settings(tmp_path, DATABASE_URL="postgres://app@db/platform")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize(("name", "value"), [("DEBUG", "sometimes"), ("DATABASE_URL", "mysql://db/x")])
def test_a_bad_variable_stops_start_up_with_a_clear_message(tmp_path, name, value):
    result = load_settings(tmp_path, SECRET_KEY="k", **{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


def test_debug_is_on_only_when_asked(tmp_path):
    result = load_settings(tmp_path, DEBUG="1")
    assert json.loads(result.stdout)["debug"] is True
