"""The platform's own settings, one namespace behind one accessor.

``settings.PLATFORM`` is a dict (like DRF's ``REST_FRAMEWORK``); code reads it
through ``platform_settings.NAME``, which supplies defaults and refuses unknown
keys. Values are looked up on every access, so ``override_settings`` works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULTS: dict[str, Any] = {
    "DEV": False,
    "AGENTS_DIR": Path("examples"),
    "DEFAULT_MODEL": "test",
    "EMBEDDED_WORKER": True,
    "EMBEDDED_WORKER_THREADS": 4,
    "OPENAI_API_KEY": "",
    "OPENAI_BASE_URL": "",
    "ANTHROPIC_API_KEY": "",
    "ANTHROPIC_BASE_URL": "",
    "LOG_LINES_KEPT": 10_000,
    "VAR_DIR": Path("var"),
    "TURN_LEASE_SECONDS": 30,
    "TURN_MAX_ATTEMPTS": 3,
    "EVAL_LEASE_SECONDS": 20,
    "STREAM_POLL_SECONDS": 5.0,
    "STREAM_HEARTBEAT_SECONDS": 15.0,
    "DOORBELL_REDIS_URL": "",
    "OUTBOUND_ALLOW": (),
    "TURN_CONCURRENCY": 100,
    "TURN_TENANT_SHARE": 0.5,
    "WORKER_DB_THREADS": 8,
    "TURN_TIME_LIMIT": 900,
    "TOKEN_CACHE_SECONDS": 5,
    "REQUEST_SLOTS": 32,
    "REQUEST_TENANT_SHARE": 0.5,
    "REQUEST_RUNNING": 2,
    "REQUEST_STEP_ASIDE_SECONDS": 0.5,
    "SHARED_AGENTS_TENANT": "local",
    "SCHEDULE_GRACE_SECONDS": 60,
    "WEBHOOK_BACKOFF_SECONDS": 20.0,
    "WEBHOOK_MAX_ATTEMPTS": 6,
    "WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS": 30.0,
    "ARTIFACT_INLINE_BYTES": 262_144,
    "ARTIFACT_MAX_BYTES": 26_214_400,
    "OTEL_TRACES_ENDPOINT": "",
    "OTEL_METRICS_ENDPOINT": "",
    "OTEL_SERVICE_NAME": "",
    "RETENTION_DAYS": 90,
    "TRIGGER_RECORDS_DAYS": 30,
    "WORKSPACE_IDLE_HOURS": 24,
    "RETENTION_BATCH_ROWS": 5000,
    "DEPLOY_MAX_BYTES": 20 * 1024 * 1024,
    "DEPLOY_MAX_FILES": 5000,
    "DEPLOY_MAX_UNPACKED_BYTES": 100 * 1024 * 1024,
    "DEPLOY_VALIDATE_SECONDS": 60,
    "SECRETS_KEYS": (),
    "SANDBOX": "untrusted",
    "QUOTAS": True,
    "QUOTA_RUNNING_TURNS": 1000,
    "QUOTA_SESSIONS_PER_MINUTE": 1200,
    "QUOTA_OPEN_STREAMS": 1000,
    "QUOTA_STORED_BYTES": 10 * 1024**3,
    "MONTHLY_BUDGET_USD": None,
    "MODEL_PRICES": {},
}


def workspaces_dir(var_dir: Path) -> Path:
    """Where session workspaces live: ``<VAR_DIR>/workspaces/<session id>/``. A caller fills
    them (``workspaceFiles``), so they must never be inside a folder agents are imported
    from (the settings refuse to start otherwise)."""
    return Path(var_dir) / "workspaces"


class PlatformSettings:
    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"unknown platform setting {name!r}")
        configured: dict[str, Any] = getattr(settings, "PLATFORM", {})
        unknown = configured.keys() - DEFAULTS.keys()
        if unknown:
            raise ImproperlyConfigured(f"Unknown keys in settings.PLATFORM: {sorted(unknown)!r}")
        return configured.get(name, DEFAULTS[name])


platform_settings = PlatformSettings()
