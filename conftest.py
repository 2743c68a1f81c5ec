"""Shared test set-up: the personas every tenancy test uses, and API clients for them.

Personas: alice and bob belong to tenant ``acme``; mallory belongs to ``umbrella``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from agent_platform import rls
from agent_platform.models import Principal
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, issue_token
from agent_platform.tests.outage import database_unreachable

# The tests' own set-up and checks (their threads too) are the platform's, across tenants
# (agent_platform.rls): under a role that row-level security binds, factories and
# assertions see every row. Requests the tests make start with no scope and enter their
# caller's tenant as ever.
rls.make_platform_the_process_default()


@pytest.fixture(autouse=True)
def _production_auth(settings):
    """Tests run as a deployed platform: no anonymous dev access unless a test asks for it;
    and on the ``test`` model whatever AGENT_DEFAULT_MODEL says (the examples name none)."""
    settings.PLATFORM = {**settings.PLATFORM, "DEV": False, "DEFAULT_MODEL": "test"}


@pytest.fixture(scope="session", autouse=True)
def _revision_store(tmp_path_factory) -> Iterator[None]:
    """Deployed revisions uploaded by tests are kept in a folder of the run, not in var/;
    the live workers and servers this run starts inherit it from the environment, so they
    serve what a test uploaded."""
    import json
    import os

    from django.conf import settings
    from django.test import override_settings

    location = str(tmp_path_factory.mktemp("revision-store"))
    os.environ["PLATFORM_DEPLOYMENT_STORAGE_OPTIONS"] = json.dumps({"location": location})
    store = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": location}}
    with override_settings(STORAGES={**settings.STORAGES, "deployments": store}):
        yield


@pytest.fixture(scope="session", autouse=True)
def flushes_win_deadlocks() -> Iterator[None]:
    """The flush after a transactional test takes every table's lock. The session's live
    worker and its beat sweeps, which serve this test database whatever test runs, may
    meanwhile take two tables in the other order. Postgres cancels whichever side waits
    the shorter ``deadlock_timeout``: the flush waits 20 s, so it is theirs (a cancelled
    flush leaves rows for the next tests to trip on)."""
    from django.core.management.commands.flush import Command
    from django.db import connections

    handle = Command.handle

    def handle_winning_deadlocks(self: Command, **options: Any) -> Any:
        flushing = connections[options.get("database") or "default"]
        if flushing.vendor != "postgresql":
            return handle(self, **options)
        with flushing.cursor() as cursor:
            cursor.execute("SET deadlock_timeout = '20s'")
        flushed = handle(self, **options)
        with flushing.cursor() as cursor:  # the next test's own deadlocks are told as usual
            cursor.execute("RESET deadlock_timeout")
        return flushed

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Command, "handle", handle_winning_deadlocks)
        yield


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's test database, and at the end nobody left connected to it when it
    is dropped: a server or worker of the run still exiting, a thread of this process
    still polling, or this process's own pooled connections (Django's close() gives them
    back to the pool, open). Who was still connected is printed."""
    yield
    import sys
    import time

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock():
        for each in connections.all():
            each.close()
            if hasattr(each, "close_pool"):
                each.close_pool()
        name = connection.settings_dict["NAME"]
        deadline = time.monotonic() + 10
        # Django's own way to the maintenance database (what dropping the test one uses).
        with connection._nodb_cursor() as admin:
            while time.monotonic() < deadline:
                admin.execute(
                    "SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    [name],
                )
                left = admin.fetchall()
                if not left:
                    return
                print(f"still connected to {name}, ended: {[app for app, _ in left]}", file=sys.stderr)
                time.sleep(0.2)


@pytest.fixture
def alice(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="acme"), name="alice")


@pytest.fixture
def bob(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="acme"), name="bob")


@pytest.fixture
def mallory(db) -> Principal:
    return PrincipalFactory(tenant=TenantFactory(slug="umbrella"), name="mallory")


@pytest.fixture
def client_for(db) -> Callable[[Principal], APIClient]:
    """An API client that sends a fresh bearer token of the given principal."""

    def make(principal: Principal) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(principal)}")
        return client

    return make


@pytest.fixture(scope="session")
def live_agents_dir(tmp_path_factory):
    """An AGENTS_DIR with the example agents and the test agents side by side."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent
    folder = tmp_path_factory.mktemp("agents")
    for source in [*(root / "examples").iterdir(), *(root / "sessions_app/tests/agent_trees").iterdir()]:
        if (source / "agent").is_dir():
            # Copied, not linked: a symlink in AGENTS_DIR that leads out of it is not served.
            shutil.copytree(source, folder / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, live_agents_dir, tmp_path_factory):
    """A real ``celery worker`` on its own queue, on the test database and Redis."""
    import os
    import signal
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from django.db import connection

    from agent_platform.tests.daphne import database_url

    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("a live worker needs DATABASE_URL (Postgres) and REDIS_URL")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PLATFORM_VAR_DIR": str(tmp_path_factory.mktemp("worker-var")),
        "AGENTS_DIR": str(live_agents_dir),
        "PLATFORM_TURN_LEASE_SECONDS": "5",
        "PLATFORM_TASK_QUEUE": queue,
        "AGENT_DEFAULT_MODEL": "test",
        # Fake Slack, GitHub and webhook receivers listen on loopback.
        "PLATFORM_OUTBOUND_ALLOW": "127.0.0.1",
        # Outbound webhooks: retries soon, subscriptions read fresh, a secret to sign with.
        "PLATFORM_WEBHOOK_BACKOFF_SECONDS": "0.2",
        "PLATFORM_WEBHOOK_SUBSCRIPTIONS_CACHE_SECONDS": "0",
        "TEST_WEBHOOK_SECRET": "whsec-test-secret",
        # Agents that export OpenTelemetry (sessions_app/tests/test_telemetry.py) do so soon.
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
        # One JSON object per log line (agent_platform/tests/test_request_ids.py reads them).
        "LOG_FORMAT": "json",
    }
    log_path = tmp_path_factory.mktemp("worker-log") / "worker.log"
    log = log_path.open("w")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "agent_platform",
            "worker",
            "--pool=threads",
            "--concurrency=4",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
        ],
        cwd=Path(__file__).resolve().parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker.queue = queue  # type: ignore[attr-defined]
    worker.var_dir = Path(env["PLATFORM_VAR_DIR"])  # type: ignore[attr-defined]
    worker.log_path = log_path  # type: ignore[attr-defined]
    yield worker
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="session", autouse=True)
def _unconsumed_task_queue():
    """Tasks sent by tests that run no worker go to a queue nobody reads, emptied at the end,
    so they never reach the live worker while another test's database is being flushed."""
    import uuid

    from agent_platform.celery import app

    queue, previous = f"unconsumed-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    app.conf.task_default_queue = queue
    yield
    app.conf.task_default_queue = previous
    if app.conf.broker_url.startswith("redis"):
        from sessions_app.queues import all_queues

        with app.connection_for_write() as connection:
            for name in all_queues(queue, app.conf.platform_turn_lanes):
                connection.default_channel.queue_purge(name)


@pytest.fixture
def live(celery_worker_process, live_agents_dir, settings, transactional_db, client_for, alice):
    """``live(principal, slug)`` -> a LiveClient whose turns run on the worker."""
    import time

    from agent_platform.celery import app
    from sessions_app.models import Turn, TurnStatus
    from sessions_app.tests.live import LiveClient

    settings.PLATFORM = {**settings.PLATFORM, "AGENTS_DIR": live_agents_dir}
    previous, app.conf.task_default_queue = app.conf.task_default_queue, celery_worker_process.queue

    def make(principal=None, slug: str = "lab") -> LiveClient:
        return LiveClient(client_for(principal or alice), slug)

    yield make
    app.conf.task_default_queue = previous
    # Let the worker finish what this test started before the database is flushed.
    deadline = time.monotonic() + 15
    while Turn.objects.filter(status=TurnStatus.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)


@pytest.fixture
def database_down() -> Iterator[None]:
    """The Postgres server unreachable for the test (see ``database_unreachable``)."""
    with database_unreachable():
        yield


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Browser tests run last: Playwright keeps an event loop on the test thread while
    a browser is open, and pytest-django's database ordering would otherwise put async
    tests after them."""
    items.sort(key=lambda item: item.nodeid.startswith("browser_tests/"))
