"""Django settings for Agent Platform.

Every value comes from the environment (DESIGN.md §6a), read once here through
the typed helpers of ``agent_platform.env``. With nothing set, the platform runs
in its embedded form: SQLite under ``var/``, an in-memory Celery broker whose
worker and beat run as threads of the serving process, and the in-memory
channel layer. ``DATABASE_URL`` and ``REDIS_URL`` switch to the distributed
form: Postgres, a Redis broker with separate ``celery worker`` / ``celery beat``
processes, and the Redis channel layer.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path

import dj_database_url
from corsheaders.defaults import default_headers as cors_default_headers
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from agent_platform.conf import workspaces_dir
from agent_platform.env import (
    env_bool,
    env_choice,
    env_decimal,
    env_fernet_keys,
    env_float,
    env_int,
    env_list,
    env_model_prices,
    env_redis_url,
    env_str,
    redis_db,
    redis_url_for_db,
)
from sessions_app.queues import QueueKind, all_queues, queue_name

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PLATFORM_VAR_DIR") or BASE_DIR / "var")
AGENTS_DIR = Path(env_str("AGENTS_DIR") or BASE_DIR / "examples")


def _check_workspaces_are_not_imported(workspaces: Path, imported: list[Path]) -> None:
    """Refuse to start when session workspaces and a folder agents are imported from
    overlap: a caller fills a workspace (``workspaceFiles``), and its code must never be
    served as an agent.

    Raises:
        ImproperlyConfigured: naming both folders and what to change.
    """
    real = Path(os.path.realpath(workspaces))
    for folder in imported:
        other = Path(os.path.realpath(folder))
        if real == other or other in real.parents or real in other.parents:
            raise ImproperlyConfigured(
                f"Session workspaces ({str(real)!r}, under PLATFORM_VAR_DIR) overlap {str(other)!r}, a folder "
                "agents are imported from: move PLATFORM_VAR_DIR or AGENTS_DIR so neither holds the other."
            )


_check_workspaces_are_not_imported(workspaces_dir(VAR_DIR), [AGENTS_DIR, BASE_DIR / "examples"])

DATABASE_URL = env_str("DATABASE_URL")
# The tables' owner, for `manage.py migrate` when DATABASE_URL names the application role.
DATABASE_MIGRATE_URL = env_str("DATABASE_MIGRATE_URL")
REDIS_URL = env_str("REDIS_URL")
EMBEDDED = not DATABASE_URL and not REDIS_URL


def _redis_urls() -> tuple[str, str]:
    """The Celery broker's and the channel layer's Redis URLs ("" when REDIS_URL is unset).

    The database REDIS_URL names (0 when it names none) is the broker's and the next one
    is the channel layer's (and the doorbell's), so deployments sharing one Redis keep
    their tasks apart by giving each its own databases: redis://host:6379/5 and
    redis://host:6379/7. CELERY_BROKER_URL and CHANNELS_REDIS_URL override each
    (docs/configuration-redis.md).
    """
    broker, layer = env_redis_url("CELERY_BROKER_URL"), env_redis_url("CHANNELS_REDIS_URL")
    if not REDIS_URL:
        if broker or layer:
            name = "CELERY_BROKER_URL" if broker else "CHANNELS_REDIS_URL"
            raise ImproperlyConfigured(f"{name} is set but REDIS_URL is not: set REDIS_URL for the distributed form.")
        return "", ""
    base = redis_db(REDIS_URL)
    return broker or redis_url_for_db(REDIS_URL, base), layer or redis_url_for_db(REDIS_URL, base + 1)


BROKER_REDIS_URL, CHANNELS_REDIS_URL = _redis_urls()

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    """SECRET_KEY from the environment; the embedded form makes one in ``var/``."""
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not EMBEDDED:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL or REDIS_URL is set.")
    # A key generated on first start and kept beside the SQLite file: nothing
    # secret lives in the repository, and sessions survive restarts.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # First: its runserver (daphne's, plus the embedded worker) wins over daphne's.
    "agent_platform.devserver",
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI and Redoc served from this origin, for /api/docs/.
    "drf_spectacular_sidecar",
    "channels",
    "django_celery_beat",
    "agent_platform",
    "agents",
    "sessions_app",
]

MIDDLEWARE = [
    # First: every response (a refusal by the middleware below included) carries its
    # X-Request-ID, and every request its access log line.
    "agent_platform.request_ids.request_id_and_access_log",
    # Next: every response carries the Content-Security-Policy, refusals included.
    "agent_platform.csp.content_security_policy",
    # Next: a NUL in the path, query or a cookie is 400 before anything looks it up.
    "agent_platform.errors.MalformedRequestMiddleware",
    # Each request to an agent's routes: its agent_sdk.http span (for agents that export).
    "agent_platform.telemetry.http_telemetry",
    "django.middleware.security.SecurityMiddleware",
    # CORS for the channel and session routes that allow an origin (sessions_app.cors):
    # answers their preflights and adds the headers to their answers, refusals included.
    "corsheaders.middleware.CorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Each request starts seeing no tenant's rows; authentication enters the caller's.
    "agent_platform.rls.ScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agent_platform.errors.DatabaseOutageMiddleware",
]

ROOT_URLCONF = "agent_platform.urls"
WSGI_APPLICATION = "agent_platform.wsgi.application"
ASGI_APPLICATION = "agent_platform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------

# Connections per process in the pool (0: no pool, one connection per thread kept for
# DB_CONN_MAX_AGE seconds instead). Daphne runs each request's sync code on a thread of
# its own, so without a pool every request would open (and pay for) a new connection.
DB_POOL_SIZE = env_int("DB_POOL_SIZE", 16)


def _program() -> str:
    """The program this process runs: ``celery``, ``daphne``, ``manage.py`` ..."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    return started.parent.name if started.name == "__main__.py" else started.name


if DATABASE_URL:
    _database = dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=0 if DB_POOL_SIZE else env_int("DB_CONN_MAX_AGE", 60),
        # With the pool, the pool checks a connection as it hands it out (see ENGINE below).
        conn_health_checks=not DB_POOL_SIZE,
    )
    if _database["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"DATABASE_URL must be a postgres:// URL, not {_database['ENGINE']!r}.")
    # A stuck writer must not wedge a session's row lock for long.
    _database["OPTIONS"] = {
        "options": "-c statement_timeout=30000 -c lock_timeout=10000 -c idle_in_transaction_session_timeout=60000",
        # Which process holds a connection, in pg_stat_activity: "agent-platform celery 4242".
        "application_name": f"agent-platform {_program()} {os.getpid()}"[:63],
    }
    if DB_POOL_SIZE:
        # Parameters bound by the server, and a statement run twice on a connection is
        # prepared there: the turn's queries are the same few, and Postgres otherwise
        # plans each one anew (about as long as running it). Long-lived pooled
        # connections are what make the prepared statements pay.
        _database["OPTIONS"].update(server_side_binding=True, prepare_threshold=2)
    if DB_POOL_SIZE:
        # Django's psycopg pool: a thread borrows a connection for a request or a task and
        # gives it back when Django would close it. A borrower waits (up to the timeout)
        # while all are out; connections idle for max_idle seconds are closed again.
        _database["OPTIONS"]["pool"] = {
            "min_size": min(2, DB_POOL_SIZE),
            "max_size": DB_POOL_SIZE,
            # How long a request waits for a connection before it is answered 503. While
            # Postgres is down nothing arrives, so this is also how long an outage keeps
            # a caller waiting for its 503; shorter than 10 s, a burst of requests queued
            # on one session's row lock on a busy machine got 503s.
            "timeout": env_int("DB_POOL_TIMEOUT", 10, minimum=1),
            # Background reconnection backs off exponentially (1, 2, 4 ... s); giving up
            # after 10 s means a request after the outage starts a fresh, immediate
            # attempt instead of waiting out a minute-long backoff (RELIABILITY.md row 5).
            "reconnect_timeout": 10,
            "max_idle": 60,
        }
    # Django's backend, except that the pool checks a connection as it hands it out with a
    # round trip only when its socket says the server let it go (agent_platform.pool), and
    # each connection carries the row-level security scope of the code using it
    # (agent_platform.rls).
    _database["ENGINE"] = "agent_platform.postgres"
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    _database = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(VAR_DIR / "db.sqlite3"),
        "OPTIONS": {
            # WAL lets readers run beside the one writer; IMMEDIATE takes the
            # write lock up front so two writers queue on the busy timeout
            # instead of failing with "database is locked" mid-transaction.
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Bodies are JSON and small; anything larger is refused with 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("PLATFORM_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# --- CORS (django-cors-headers): decided per request by sessions_app.cors ----------------

# No path is open to other origins by pattern: only the routes sessions_app.cors allows
# (a channel's cors_origins, a tenant's) answer a preflight.
CORS_URLS_REGEX = r"(?!)"
CORS_ALLOWED_ORIGINS: list[str] = []
CORS_ALLOW_CREDENTIALS = False
CORS_ALLOW_HEADERS = (*cors_default_headers, "idempotency-key", "last-event-id", "x-request-id")
# A page may read the request id it was given (to quote it in a bug report).
CORS_EXPOSE_HEADERS = ["X-Request-ID"]
CORS_PREFLIGHT_MAX_AGE = 600

# --- Static files, i18n ------------------------------------------------------------

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the app and project folders too, so the embedded form
# needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Security ------------------------------------------------------------------------

PLATFORM_DEV = env_bool("PLATFORM_DEV", EMBEDDED)
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Secure cookies need HTTPS; the embedded form is plain HTTP on loopback.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", not PLATFORM_DEV)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None


def _otel_signal_url(signal: str) -> str:
    """OpenTelemetry's own variables (docs/observability.md): the full URL of one signal's
    OTLP/HTTP endpoint, or "" when none is named or the SDK is disabled. The exporter reads
    the others (headers, timeout, compression, certificates) itself."""
    if env_bool("OTEL_SDK_DISABLED", False):
        return ""
    protocol = env_str(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or env_str("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol and protocol != "http/protobuf":
        raise ImproperlyConfigured(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: only http/protobuf is exported.")
    own = env_str(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    base = env_str("OTEL_EXPORTER_OTLP_ENDPOINT").rstrip("/")
    return own or (f"{base}/v1/{signal}" if base else "")


def _sandbox_mode() -> str:
    mode = env_str("PLATFORM_SANDBOX", "untrusted")
    if mode not in ("untrusted", "always", "off"):
        raise ImproperlyConfigured(f"PLATFORM_SANDBOX={mode!r}: use untrusted, always or off.")
    if mode == "off" and not PLATFORM_DEV:
        raise ImproperlyConfigured("PLATFORM_SANDBOX=off would run tenant code with the credentials: dev mode only.")
    return mode


# --- The platform's own knobs (read through agent_platform.conf.platform_settings) ---

# How long a turn may run (seconds), and how many turns one worker process runs at once.
TURN_TIME_LIMIT = env_int("PLATFORM_TURN_TIME_LIMIT", 900, minimum=5)
TURN_CONCURRENCY = env_int("PLATFORM_TURN_CONCURRENCY", 100, minimum=1)

PLATFORM = {
    "DEV": PLATFORM_DEV,
    "AGENTS_DIR": AGENTS_DIR,
    "DEFAULT_MODEL": env_str("AGENT_DEFAULT_MODEL", "test"),
    "EMBEDDED_WORKER": not REDIS_URL,
    "EMBEDDED_WORKER_THREADS": env_int("PLATFORM_EMBEDDED_WORKER_THREADS", 4, minimum=1),
    "OPENAI_API_KEY": env_str("OPENAI_API_KEY"),
    "OPENAI_BASE_URL": env_str("OPENAI_BASE_URL"),
    "ANTHROPIC_API_KEY": env_str("ANTHROPIC_API_KEY"),
    "ANTHROPIC_BASE_URL": env_str("ANTHROPIC_BASE_URL"),
    "LOG_LINES_KEPT": env_int("PLATFORM_LOG_LINES_KEPT", 10_000, minimum=100),
    "VAR_DIR": VAR_DIR,
    # A running turn's worker renews its lease every third of this; a turn whose lease
    # ran out (its worker died) is taken up again by the sweeper.
    "TURN_LEASE_SECONDS": env_int("PLATFORM_TURN_LEASE_SECONDS", 30, minimum=3),
    "TURN_MAX_ATTEMPTS": env_int("PLATFORM_TURN_MAX_ATTEMPTS", 3, minimum=1),
    # An eval run's worker renews its lease every 2 s; past it, beat's sweep resumes the run.
    "EVAL_LEASE_SECONDS": env_int("PLATFORM_EVAL_LEASE_SECONDS", 20, minimum=3),
    # Where the "new events" signal (sessions_app.doorbell) goes: Redis pub/sub in the
    # distributed form, an in-process bell in the embedded one (empty).
    "DOORBELL_REDIS_URL": CHANNELS_REDIS_URL,
    # How often each server process checks, in one query for all its open streams,
    # whether a session grew without a signal (pub/sub is at-most-once; Redis may be down).
    "STREAM_POLL_SECONDS": float(env_int("PLATFORM_STREAM_POLL_SECONDS", 5, minimum=1)),
    # How often an idle SSE stream (and an NDJSON one that asked, ?heartbeat=1) sends a
    # heartbeat, so proxies that cut silent connections leave it open; one timer per process.
    "STREAM_HEARTBEAT_SECONDS": env_float("PLATFORM_STREAM_HEARTBEAT_SECONDS", 15.0, minimum=0.05, maximum=3600.0),
    # Hosts ("h", "h:port") and networks ("10.0.0.0/8") agent-initiated HTTP (MCP connections,
    # HTTP tools) may reach although they are not public https; empty in production.
    "OUTBOUND_ALLOW": tuple(env_list("PLATFORM_OUTBOUND_ALLOW", [])),
    # Turns one worker process runs at once: the worker's task threads (Celery's threads pool).
    "TURN_CONCURRENCY": TURN_CONCURRENCY,
    # The most of a worker's turn slots one tenant holds while another tenant's turns
    # wait in the broker (a tenant alone may use them all).
    "TURN_TENANT_SHARE": env_float("PLATFORM_TURN_TENANT_SHARE", 0.5, minimum=0.01, maximum=1.0),
    # Threads (and so at most database connections) a worker process uses for its turns'
    # database work, however many turns run; keep it under DB_POOL_SIZE.
    "WORKER_DB_THREADS": env_int("PLATFORM_WORKER_DB_THREADS", max(1, min(8, DB_POOL_SIZE // 2)), minimum=1),
    # A turn running longer than this (seconds) is stopped and ends turn.failed.
    "TURN_TIME_LIMIT": TURN_TIME_LIMIT,
    # How long a process remembers a bearer token's principal (0: look it up on every
    # request). A revocation holds at once in the process that made it, elsewhere
    # within this many seconds.
    "TOKEN_CACHE_SECONDS": env_int("PLATFORM_TOKEN_CACHE_SECONDS", 5),
    # Requests a web process works on at once (their views; waiting event streams are
    # not counted), and the most of them one tenant holds: its further requests wait
    # for its earlier ones while other tenants' go in.
    "REQUEST_SLOTS": env_int("PLATFORM_REQUEST_SLOTS", 32, minimum=1),
    "REQUEST_TENANT_SHARE": env_float("PLATFORM_REQUEST_TENANT_SHARE", 0.5, minimum=0.01, maximum=1.0),
    # Of those, how many run at once, tenants served in turn (more would only share the
    # process's one interpreter lock); one running longer than REQUEST_STEP_ASIDE_SECONDS
    # is waiting on something, and gives its place to the next.
    "REQUEST_RUNNING": env_int("PLATFORM_REQUEST_RUNNING", 2, minimum=1),
    "REQUEST_STEP_ASIDE_SECONDS": env_float("PLATFORM_REQUEST_STEP_ASIDE_SECONDS", 0.5, minimum=0.001, maximum=60.0),
    # The tenant owning the sessions that packs, schedules and outbound sources start on a
    # shared AGENTS_DIR agent (which has no tenant of its own).
    "SHARED_AGENTS_TENANT": env_str("PLATFORM_SHARED_AGENTS_TENANT") or "local",
    # A schedule's fire that reaches a worker more than this many seconds after its fire
    # time (beat was down across it) is skipped and logged, never run late.
    "SCHEDULE_GRACE_SECONDS": env_int("PLATFORM_SCHEDULE_GRACE_SECONDS", 60, minimum=1),
    # Outbound webhooks: a failed attempt is retried after this many seconds, doubled each
    # time, up to WEBHOOK_MAX_ATTEMPTS attempts (6 from 20 s: about 10 minutes in all).
    "WEBHOOK_BACKOFF_SECONDS": env_float("PLATFORM_WEBHOOK_BACKOFF_SECONDS", 20.0, minimum=0.01, maximum=3600.0),
    "WEBHOOK_MAX_ATTEMPTS": env_int("PLATFORM_WEBHOOK_MAX_ATTEMPTS", 6, minimum=1),
    # How long a worker process trusts what it read of the tenants' webhook subscriptions (0:
    # read them whenever an event might need them). Events a stale read let pass wait for the sweep.
    # Retention (docs/retention.md): days an ended session is kept when neither its agent
    # (define_agent(retention_days=...)) nor its tenant says (0: forever); days the trigger
    # tables' bookkeeping is kept; hours after which a kept session's idle workspace is
    # deleted (0: never); rows one delete statement of a retention pass takes at most.
    "RETENTION_DAYS": env_int("PLATFORM_RETENTION_DAYS", 90, minimum=0),
    "TRIGGER_RECORDS_DAYS": env_int("PLATFORM_TRIGGER_RECORDS_DAYS", 30, minimum=1),
    "WORKSPACE_IDLE_HOURS": env_int("PLATFORM_WORKSPACE_IDLE_HOURS", 24, minimum=0),
    "RETENTION_BATCH_ROWS": env_int("PLATFORM_RETENTION_BATCH_ROWS", 5000, minimum=1),
    "WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS": env_float(
        "PLATFORM_WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS", 30.0, minimum=0.0, maximum=3600.0
    ),
    # Per-tenant quotas (docs/quotas.md): the defaults for a tenant whose row leaves them
    # empty; PLATFORM_QUOTAS=false turns every quota and budget check off.
    "QUOTAS": env_bool("PLATFORM_QUOTAS", True),
    "QUOTA_RUNNING_TURNS": env_int("PLATFORM_QUOTA_RUNNING_TURNS", 1000, minimum=1),
    "QUOTA_SESSIONS_PER_MINUTE": env_int("PLATFORM_QUOTA_SESSIONS_PER_MINUTE", 1200, minimum=1),
    "QUOTA_OPEN_STREAMS": env_int("PLATFORM_QUOTA_OPEN_STREAMS", 1000, minimum=1),
    "QUOTA_STORED_BYTES": env_int("PLATFORM_QUOTA_STORED_BYTES", 10 * 1024**3, minimum=0),
    # USD a tenant's turns may cost in a calendar month (UTC) when its row sets none; unset: no budget.
    "MONTHLY_BUDGET_USD": env_decimal("PLATFORM_MONTHLY_BUDGET_USD"),
    # Prices per million tokens for models the maintained table (genai-prices) lacks or
    # prices otherwise: {"provider:model": {"input": "1.0", "output": "2.0", "cacheRead": "0.1", "cacheWrite": "0"}}.
    "MODEL_PRICES": env_model_prices("PLATFORM_MODEL_PRICES"),
    # Artifact content up to this many bytes is kept in its Postgres row; larger content in
    # the files store. ARTIFACT_MAX_BYTES is the most one artifact may hold (a tag over it fails).
    "ARTIFACT_INLINE_BYTES": env_int("PLATFORM_ARTIFACT_INLINE_BYTES", 262_144, minimum=0),
    "ARTIFACT_MAX_BYTES": env_int("PLATFORM_ARTIFACT_MAX_BYTES", 26_214_400, minimum=1),
    # OpenTelemetry export by the environment (OTEL_EXPORTER_OTLP_*): full signal URLs, ""
    # for none; an agent's otel.py may name its own endpoint or turn export off.
    "OTEL_TRACES_ENDPOINT": _otel_signal_url("traces"),
    "OTEL_METRICS_ENDPOINT": _otel_signal_url("metrics"),
    "OTEL_SERVICE_NAME": env_str("OTEL_SERVICE_NAME"),
    # Deployments (docs/deployments.md): the largest archive a tenant may upload (bytes), and
    # what it may unpack to (files, bytes): more is refused as an archive bomb; how long
    # the validation of an uploaded tree may take (seconds).
    "DEPLOY_MAX_BYTES": env_int("PLATFORM_DEPLOY_MAX_BYTES", 20 * 1024 * 1024, minimum=1024),
    "DEPLOY_MAX_FILES": env_int("PLATFORM_DEPLOY_MAX_FILES", 5000, minimum=1),
    "DEPLOY_MAX_UNPACKED_BYTES": env_int("PLATFORM_DEPLOY_MAX_UNPACKED_BYTES", 100 * 1024 * 1024, minimum=1024),
    "DEPLOY_VALIDATE_SECONDS": env_int("PLATFORM_DEPLOY_VALIDATE_SECONDS", 60, minimum=1),
    # Fernet keys that encrypt stored agent secrets (docs/secrets.md): the first encrypts,
    # every one decrypts (rotation); a key derived from SECRET_KEY always decrypts too, and
    # encrypts when none is set.
    "SECRETS_KEYS": env_fernet_keys("PLATFORM_SECRETS_KEY"),
    # Which agents' trees run in the bubblewrap sandbox (docs/security.md): "untrusted"
    # (tenant deployments), "always" (AGENTS_DIR too) or "off" (dev mode only).
    "SANDBOX": _sandbox_mode(),
}


def _deployment_storage() -> dict[str, object]:
    """The revision store: Django's storage API, a folder under PLATFORM_VAR_DIR by default,
    or any backend (an S3-compatible bucket through django-storages, say) by
    PLATFORM_DEPLOYMENT_STORAGE_BACKEND and its options as a JSON object."""
    backend = env_str("PLATFORM_DEPLOYMENT_STORAGE_BACKEND") or "django.core.files.storage.FileSystemStorage"
    raw = env_str("PLATFORM_DEPLOYMENT_STORAGE_OPTIONS")
    if not raw:
        options: object = {"location": str(VAR_DIR / "deployments")} if backend.endswith("FileSystemStorage") else {}
    else:
        try:
            options = json.loads(raw)
        except ValueError as error:
            raise ImproperlyConfigured(f"PLATFORM_DEPLOYMENT_STORAGE_OPTIONS is not JSON: {error}") from None
        if not isinstance(options, dict):
            raise ImproperlyConfigured("PLATFORM_DEPLOYMENT_STORAGE_OPTIONS must be a JSON object")
    return {"BACKEND": backend, "OPTIONS": options}


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    # Uploaded agent trees (agents.deployments), one archive per revision.
    "deployments": _deployment_storage(),
}


# --- Django REST framework, OpenAPI ------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["agent_platform.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "agent_platform.scopes.TokenScopePermission",
    ],
    "DEFAULT_PARSER_CLASSES": ["agent_platform.parsers.StorableJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "agent_platform.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Agent Platform API",
    "DESCRIPTION": (
        "Sessions, events and management routes of Agent Platform. Bodies are JSON of at most "
        "PLATFORM_MAX_BODY_BYTES (1 MiB by default), nested at most 64 levels; strings may not "
        "contain NUL (U+0000) or unpaired surrogates. Errors are `{error, message}`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "displayRequestDuration": True},
    # Request bodies get their own components, so non-blank strings show as minLength 1.
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1 is full JSON Schema: workspace file names are described with propertyNames.
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "agent_platform.schema.document_error_responses",
        "agent_platform.schema.tag_operations",
    ],
}

# --- Celery (RELIABILITY.md §2) -------------------------------------------------------------

CELERY_BROKER_URL = BROKER_REDIS_URL or "memory://localhost/"
# Longer than the longest allowed turn, so Redis never hands a running turn's
# message to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, float] = {
    "visibility_timeout": env_int("PLATFORM_VISIBILITY_TIMEOUT", 4 * TURN_TIME_LIMIT, minimum=10),
}
if not REDIS_URL:
    # The in-memory broker is polled; its default of once a second would delay every turn.
    # (For Redis this option is the BRPOP timeout instead, so it stays unset there.)
    CELERY_BROKER_TRANSPORT_OPTIONS["polling_interval"] = 0.01
# One deployment's (or one test run's) tasks stay in their own queues, all named from
# this prefix: turns in per-tenant lanes, hooks, schedules, maintenance (sessions_app.queues).
CELERY_TASK_DEFAULT_QUEUE = env_str("PLATFORM_TASK_QUEUE", "celery")
TURN_LANES = env_int("PLATFORM_TURN_LANES", 8, minimum=1)
CELERY_PLATFORM_TURN_LANES = TURN_LANES  # read by sessions_app.queues.send from the app's config
# A worker started with no -Q serves every queue of the prefix.
CELERY_TASK_QUEUES = [Queue(name) for name in all_queues(CELERY_TASK_DEFAULT_QUEUE, TURN_LANES)]
# Many turns per worker process (DESIGN.md §9.1): turns are I/O-bound, so a worker runs
# TURN_CONCURRENCY task threads, each handing its turn to the process's one event loop
# (sessions_app.turn_loop); database work for turns goes to WORKER_DB_THREADS threads.
# Prefork (PLATFORM_WORKER_POOL=prefork) still works: each child runs one turn at a time.
CELERY_WORKER_POOL = env_str("PLATFORM_WORKER_POOL", "threads")
CELERY_WORKER_CONCURRENCY = TURN_CONCURRENCY
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
CELERY_TASK_TIME_LIMIT = TURN_TIME_LIMIT
CELERY_TASK_SOFT_TIME_LIMIT = max(TURN_TIME_LIMIT - 60, TURN_TIME_LIMIT * 9 // 10)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_WORKER_MAX_TASKS_PER_CHILD = 200
CELERY_WORKER_MAX_MEMORY_PER_CHILD = 500_000  # KiB
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT = 30
CELERY_WORKER_ENABLE_SOFT_SHUTDOWN_ON_IDLE = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
_MAINTENANCE_QUEUE = queue_name(CELERY_TASK_DEFAULT_QUEUE, QueueKind.MAINTENANCE)
CELERY_BEAT_SCHEDULE = {
    "sweep-turns": {
        "task": "sessions_app.tasks.sweep_turns",
        "schedule": float(env_int("PLATFORM_SWEEP_SECONDS", 10, minimum=1)),
        "options": {"expires": 10, "queue": _MAINTENANCE_QUEUE},
    },
    # Catches up on sessions whose hook dispatch trigger was lost (sessions_app.dispatch).
    "sweep-dispatch": {
        "task": "sessions_app.tasks.dispatch_events",
        "schedule": 10.0,
        "options": {"expires": 10, "queue": _MAINTENANCE_QUEUE},
    },
    # Due reminders live in Postgres; this sweep fires them (sessions_app.triggers.reminders).
    "fire-reminders": {
        "task": "sessions_app.tasks.fire_reminders",
        "schedule": 5.0,
        "options": {"expires": 5, "queue": _MAINTENANCE_QUEUE},
    },
    # One PeriodicTask per served schedule (sessions_app.triggers.schedules).
    "sync-schedules": {
        "task": "sessions_app.tasks.sync_schedules",
        "schedule": float(env_int("PLATFORM_SCHEDULE_SYNC_SECONDS", 30, minimum=1)),
        "options": {"expires": 30, "queue": _MAINTENANCE_QUEUE},
    },
    # Retries outbound webhook deliveries that are due (sessions_app.triggers.webhooks).
    "sweep-webhooks": {
        "task": "sessions_app.tasks.sweep_webhook_deliveries",
        "schedule": 15.0,
        "options": {"expires": 15, "queue": _MAINTENANCE_QUEUE},
    },
    # Eval runs whose worker died: resumed or failed (sessions_app.evals.runs).
    "sweep-eval-runs": {
        "task": "sessions_app.tasks.sweep_eval_runs",
        "schedule": 10.0,
        "options": {"expires": 10, "queue": _MAINTENANCE_QUEUE},
    },
    # Artifacts past their retention (sessions_app.records.artifacts).
    "prune-artifacts": {
        "task": "sessions_app.tasks.prune_artifacts",
        "schedule": 3600.0,
        "options": {"expires": 3600, "queue": _MAINTENANCE_QUEUE},
    },
    # Ended sessions past their retention, old trigger records, idle workspaces (sessions_app.records.retention).
    "run-retention": {
        "task": "sessions_app.tasks.run_retention",
        "schedule": float(env_int("PLATFORM_RETENTION_SECONDS", 3600, minimum=1)),
        "options": {"expires": 600, "queue": _MAINTENANCE_QUEUE},
    },
    "prune-log-lines": {
        "task": "sessions_app.tasks.prune_log_lines",
        "schedule": 600.0,
        # A fire missed while beat was down is dropped, not run late.
        "options": {"expires": 600, "queue": _MAINTENANCE_QUEUE},
    },
}

# --- Channels ---------------------------------------------------------------------------------

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [CHANNELS_REDIS_URL]},
        },
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Logging ------------------------------------------------------------------------------------

_LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
# plain: one readable line per record; json: one JSON object per line (docs/logging.md).
LOG_FORMAT = env_choice("LOG_FORMAT", ("plain", "json"))
# One agent_platform.access line per HTTP request (method, path, status, duration, request id).
ACCESS_LOG = env_bool("ACCESS_LOG", True)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"()": "agent_platform.request_ids.PlainLines"},
        # Extras passed to a log call (tenant_id, session_id, status, ...) become fields too.
        "json": {
            "()": "sessions_app.logs.JsonLines",
            "fmt": ["levelname", "name", "message", "request_id"],
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": "time",
        },
    },
    "filters": {
        "maintenance_at_debug": {"()": "sessions_app.logs.MaintenanceTasksAtDebug"},
        "request_id": {"()": "agent_platform.request_ids.RequestIdFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "level": _LOG_LEVEL,
            "filters": ["request_id"],
        },
        # The platform's lines and what agent code logs (any logger) at INFO+ are also kept
        # in the database for GET /<slug>/v1/logs, whatever LOG_LEVEL; the handler picks
        # them (sessions_app.logs).
        "database": {"class": "sessions_app.logs.DatabaseLogHandler", "level": "INFO", "filters": ["request_id"]},
    },
    "root": {"handlers": ["console", "database"], "level": "DEBUG" if _LOG_LEVEL == "DEBUG" else "INFO"},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Beat's sweeper fires every few seconds: its lines are DEBUG.
        **{
            name: {"filters": ["maintenance_at_debug"]}
            for name in ("celery.beat", "celery.worker.strategy", "celery.app.trace", "django_celery_beat.schedulers")
        },
    },
}
