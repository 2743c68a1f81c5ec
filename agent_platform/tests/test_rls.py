"""Row-level security (``agent_platform.rls``): the second isolation layer, under the
application role (LOGIN NOSUPERUSER NOBYPASSRLS) that a deployment connects as.

The rest of the suite connects as the ``postgres`` superuser, which RLS does not bind;
here a role of this test database's own is made (``agent_platform.db_roles``, as
``manage.py migrate`` does with ``DATABASE_MIGRATE_URL``) and a worker, a server and a
beat task run as it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.apps import apps
from django.db import connection, models
from django.utils import timezone

from agent_platform import db_roles
from agent_platform.models import Tenant
from agent_platform.rls_sql import POLICY
from agent_platform.tests.daphne import ROOT, Daphne, database_url, serve
from agent_platform.tests.factories import PrincipalFactory, TenantFactory, issue_token, staff_user_for
from agents.models import Agent, AgentSource
from sessions_app import eventlog
from sessions_app.models import Event, Session, SessionStatus
from sessions_app.tests.factories import AgentFactory, SessionFactory, TurnFactory

PROJECT_APPS = {"agent_platform", "agents", "sessions_app"}
TIMEOUT = 20
WORKER_FLAGS = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"]


def tenant_owned_models() -> dict[str, str]:
    """table -> why it is tenant-owned, derived from the models: a ``tenant`` foreign key,
    or a required foreign key to a tenant-owned model (followed until one is found)."""
    project = [model for model in apps.get_models() if model._meta.app_label in PROJECT_APPS]
    owned: dict[type[models.Model], str] = {}
    changed = True
    while changed:
        changed = False
        for model in project:
            if model in owned:
                continue
            for field in model._meta.fields:
                if not field.is_relation or field.related_model is None:
                    continue
                if field.related_model is Tenant and field.name == "tenant":
                    owned[model] = "tenant"
                elif field.related_model in owned and not field.null:
                    owned[model] = f"{field.name} -> {field.related_model._meta.db_table}"
                else:
                    continue
                changed = True
                break
    return {model._meta.db_table: why for model, why in owned.items()}


def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row-level security is Postgres's")


@pytest.mark.django_db
def test_every_tenant_owned_table_has_its_policy_enabled_and_forced():
    _postgres_only()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "EXISTS (SELECT 1 FROM pg_policies p WHERE p.tablename = c.relname AND p.policyname = %s) "
            "FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace",
            [POLICY],
        )
        state = {name: (enabled, forced, policy) for name, enabled, forced, policy in cursor.fetchall()}
    owned = tenant_owned_models()
    assert "sessions_app_event" in owned and "agent_platform_apitoken" in owned  # the derivation follows FKs
    missing = {table: why for table, why in owned.items() if state.get(table) != (True, True, True)}
    assert not missing, (
        f"tenant-owned tables without RLS ({missing}): add a migration with "
        "agent_platform.rls_sql.tenant_column(...) or .through(...) (docs/rls.md)"
    )


# --- the application role ----------------------------------------------------------------


def _url_as(user: str, password: str) -> str:
    db = connection.settings_dict
    return f"postgres://{user}:{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@pytest.fixture(scope="module")
def app_url(django_db_setup, django_db_blocker) -> Iterator[str]:
    """The URL of an application role of this test database, granted as migrate grants it."""
    if connection.vendor != "postgresql" or not os.environ.get("REDIS_URL"):
        pytest.skip("needs DATABASE_URL (Postgres) and REDIS_URL")
    with django_db_blocker.unblock():
        role = re.sub(r"[^a-z0-9_]", "_", f"{connection.settings_dict['NAME']}_app".lower())[:63]
        url = _url_as(role, f"rls-{uuid.uuid4().hex[:12]}")
        assert db_roles.ensure_app_role("default", url) == role
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [role])
            assert cursor.fetchone() == (False, False)
    yield url
    with django_db_blocker.unblock():
        db_roles.drop_app_role("default", role)


@pytest.fixture
def two_tenants(transactional_db) -> dict[str, Any]:
    """Rows of acme and umbrella in the tables a flow touches (committed: other
    connections see them)."""
    acme, umbrella = TenantFactory(slug="acme"), TenantFactory(slug="umbrella")
    alice, mallory = PrincipalFactory(tenant=acme, name="alice"), PrincipalFactory(tenant=umbrella, name="mallory")
    tokens = {"alice": issue_token(alice), "mallory": issue_token(mallory)}
    for principal in (alice, mallory):
        TurnFactory(session=SessionFactory(principal=principal))
    Agent.objects.create(slug="acme-own", source=AgentSource.DEPLOYMENT, path="/nowhere", tenant=acme)
    return {"acme": acme, "umbrella": umbrella, "alice": alice, "mallory": mallory, "tokens": tokens}


def _counts(url: str, tables: list[str], setting: str | None = None) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as raw:
        if setting is not None:
            raw.execute("SELECT set_config('app.tenant_id', %s, false)", [setting])
        return {table: raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}  # noqa: S608


def test_the_app_role_with_no_tenant_set_sees_no_row_of_any_tenant_table(app_url, two_tenants):
    """The RLS probe: a raw query as the application role, tenant context unset."""
    tables = sorted(tenant_owned_models())
    as_owner = _counts(database_url(), tables, "*")  # the platform's scope: a non-superuser owner is bound too
    for seeded in ["sessions_app_session", "sessions_app_turn", "agent_platform_principal", "agent_platform_apitoken"]:
        assert as_owner[seeded] >= 2
    assert _counts(app_url, tables) == dict.fromkeys(tables, 0)
    # Not a closed door: a tenant's scope sees its rows and nobody else's, the platform's all.
    acme = _counts(app_url, tables, str(two_tenants["acme"].pk))
    assert acme["sessions_app_session"] == 1 and acme["sessions_app_turn"] == 1
    assert acme["agents_agent"] == as_owner["agents_agent"]  # the shared agents and its own
    umbrella = _counts(app_url, ["agents_agent"], str(two_tenants["umbrella"].pk))
    assert umbrella["agents_agent"] == as_owner["agents_agent"] - 1
    assert _counts(app_url, tables, "*") == as_owner


def test_the_app_role_cannot_write_a_row_into_another_tenant(app_url, two_tenants):
    session = Session.objects.get(principal=two_tenants["mallory"])
    with psycopg.connect(app_url, autocommit=True) as raw:
        raw.execute("SELECT set_config('app.tenant_id', %s, false)", [str(two_tenants["acme"].pk)])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            raw.execute(
                "INSERT INTO sessions_app_kventry (tenant_id, agent_id, key, value, updated_at) "
                "VALUES (%s, %s, 'k', '1', now())",
                [two_tenants["umbrella"].pk, session.agent_id],
            )
        assert raw.execute("UPDATE sessions_app_session SET title = 'x' WHERE id = %s", [session.pk]).rowcount == 0


def test_the_app_role_cannot_append_an_event_to_another_tenants_session(app_url, two_tenants):
    """An event's key to its session is not checked by Postgres: what keeps events in their
    tenant is that the append inserts only through its own update of the session row."""
    session, own = (Session.objects.get(principal=two_tenants[name]) for name in ("mallory", "alice"))
    before = Event.objects.filter(session=session).count()
    sql = eventlog._append_sql(fenced=False)
    rows = json.dumps([{"type": "message.received", "turn": None, "data": {"text": "planted"}}])
    with psycopg.connect(app_url, autocommit=True) as raw:
        raw.execute("SELECT set_config('app.tenant_id', %s, false)", [str(two_tenants["acme"].pk)])
        params = {"count": 1, "at": timezone.now(), "rows": rows}
        written = raw.execute(sql, {**params, "session": session.pk}).fetchall()
        mine = raw.execute(sql, {**params, "session": own.pk}).fetchall()  # the statement does write
    assert written == [] and len(mine) == 1
    assert Event.objects.filter(session=session).count() == before


# --- the platform under the application role -------------------------------------------------


@pytest.fixture(scope="module")
def app_worker(app_url, live_agents_dir, tmp_path_factory) -> Iterator[Any]:
    queue = f"rls-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": app_url,
        "PLATFORM_VAR_DIR": str(tmp_path_factory.mktemp("rls-worker-var")),
        "AGENTS_DIR": str(live_agents_dir),
        "PLATFORM_TASK_QUEUE": queue,
        "AGENT_DEFAULT_MODEL": "test",
    }
    log = (tmp_path_factory.mktemp("rls-worker-log") / "worker.log").open("w")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "agent_platform",
            "worker",
            "--pool=threads",
            "--concurrency=2",
            *WORKER_FLAGS,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker.queue = queue  # type: ignore[attr-defined]
    worker.log_path = Path(log.name)  # type: ignore[attr-defined]
    yield worker
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="module")
def app_server(app_url, app_worker, live_agents_dir, tmp_path_factory) -> Iterator[Daphne]:
    env = {
        "DATABASE_URL": app_url,
        "AGENTS_DIR": str(live_agents_dir),
        "PLATFORM_DEV": "0",
        "PLATFORM_TASK_QUEUE": app_worker.queue,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "AGENT_DEFAULT_MODEL": "test",
        "SECURE_COOKIES": "0",  # plain http: the admin's cookies must come back
    }
    yield from serve(tmp_path_factory, env)


def _wait_for_type(client: httpx.Client, path: str, wanted: str, worker: Any) -> list[dict[str, Any]]:
    deadline = time.monotonic() + TIMEOUT
    while True:
        events = client.get(f"{path}/events").json()["events"]
        if any(event["type"] == wanted for event in events):
            return list(events)
        if time.monotonic() > deadline:
            pytest.fail(f"no {wanted} in {[e['type'] for e in events]}; worker: {worker.log_path.read_text()[-2000:]}")
        time.sleep(0.05)


def test_a_session_and_its_turn_run_as_the_app_role_and_stay_the_tenants(app_server, app_worker, two_tenants):
    tokens = two_tenants["tokens"]
    alice = httpx.Client(base_url=app_server.url, headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=10)
    mallory = httpx.Client(
        base_url=app_server.url, headers={"Authorization": f"Bearer {tokens['mallory']}"}, timeout=10
    )
    with alice, mallory:
        started = alice.post("/lab/v1/session", json={"message": "hello"})
        assert started.status_code == 201, started.text
        session_id = started.json()["sessionId"]
        path = f"/lab/v1/session/{session_id}"
        events = _wait_for_type(alice, path, "turn.completed", app_worker)
        assert [event["index"] for event in events] == list(range(len(events)))
        with alice.stream("GET", f"{path}/stream", params={"startIndex": 0}) as stream:
            first = next(stream.iter_lines())
        assert '"session.started"' in first
        # The app's own rules hold as they did: another tenant's id is 403 (not 404), lists leave it out.
        assert mallory.get(path).status_code == 403
        assert session_id not in mallory.get("/lab/v1/sessions").text
        assert alice.get(path).json()["status"] in {SessionStatus.WAITING, SessionStatus.COMPLETED}


def _sign_in(client: httpx.Client, username: str, password: str) -> httpx.Client:
    page = client.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    answer = client.post(
        "/admin/login/?next=/admin/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": f"{client.base_url}admin/login/"},
    )
    assert answer.status_code == 302, answer.text[:500]
    return client


def test_admin_pages_show_staff_their_tenant_and_a_superuser_every_tenant(app_server, two_tenants):
    from django.contrib.auth.models import User

    staff_user_for(two_tenants["alice"], username="alice-staff", password="pw-alice-staff")
    User.objects.create_superuser("root", "", "pw-root")
    ids = {name: Session.objects.get(principal=two_tenants[name]).pk for name in ("alice", "mallory")}
    with httpx.Client(base_url=app_server.url, timeout=10) as staff:
        page = _sign_in(staff, "alice-staff", "pw-alice-staff").get("/admin/sessions_app/session/")
        assert page.status_code == 200 and ids["alice"] in page.text and ids["mallory"] not in page.text
    with httpx.Client(base_url=app_server.url, timeout=10) as root:
        page = _sign_in(root, "root", "pw-root").get("/admin/sessions_app/session/")
        assert page.status_code == 200 and ids["alice"] in page.text and ids["mallory"] in page.text


POOLED_SCOPES = """
import json, django
django.setup()
from django.db import connection, transaction
from agent_platform import rls
from sessions_app.models import Session

def backend():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), current_setting('app.tenant_id', true)")
        return list(cursor.fetchone())

seen = []
with rls.tenant_scope(TENANT):
    seen.append([Session.objects.count(), *backend()])
connection.close()  # back to the pool (of one connection)
seen.append([Session.objects.count(), *backend()])
connection.close()
try:
    with transaction.atomic(), rls.tenant_scope(TENANT):
        Session.objects.count()  # the scope set inside a transaction that is rolled back
        raise RuntimeError
except RuntimeError:
    pass
connection.close()
seen.append([Session.objects.count(), *backend()])
print(json.dumps(seen))
"""


def test_a_pooled_connection_given_back_after_a_tenants_work_sees_nothing_when_borrowed_again(app_url, two_tenants):
    script = POOLED_SCOPES.replace("TENANT", str(two_tenants["acme"].pk))
    env = {**os.environ, "DATABASE_URL": app_url, "DB_POOL_SIZE": "1"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (in_scope, after, after_rollback) = json.loads(done.stdout.strip().splitlines()[-1])
    acme = str(two_tenants["acme"].pk)
    assert in_scope[0] == 1 and in_scope[2] == acme
    # The same connection (one in the pool), given back emptied: no tenant, no rows.
    assert after == [0, in_scope[1], ""] and after_rollback == [0, in_scope[1], ""]


def test_a_beat_task_as_the_app_role_spans_every_tenant(app_url, two_tenants, live_agents_dir):
    """Retention is the platform's: under the app role it still removes both tenants' due sessions."""
    long_ago = timezone.now() - timedelta(days=400)
    agent = AgentFactory(slug="weather")
    due = [
        SessionFactory(principal=two_tenants[name], agent=agent, status=SessionStatus.COMPLETED).pk
        for name in ("alice", "mallory")
    ]
    Session.objects.filter(pk__in=due).update(updated_at=long_ago)
    script = "import django; django.setup(); from sessions_app.tasks import run_retention; run_retention.apply().get()"
    env = {**os.environ, "DATABASE_URL": app_url, "PLATFORM_RETENTION_DAYS": "30", "AGENTS_DIR": str(ROOT / "examples")}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not Session.objects.filter(pk__in=due).exists()


def test_compose_connects_as_the_app_role_and_migrates_as_the_owner():
    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    user = re.compile(r"postgres://([^:@]+)")
    for name in ("web", "worker", "schedules-worker", "beat"):
        assert user.match(services[name]["environment"]["DATABASE_URL"])[1] == "agent_platform_app"  # type: ignore[index]
    owner = user.match(services["migrate"]["environment"]["DATABASE_MIGRATE_URL"])
    assert owner is not None and owner[1] == "${POSTGRES_USER"
    for name in ("web", "worker", "schedules-worker", "beat"):
        assert "DATABASE_MIGRATE_URL" not in services[name]["environment"]
