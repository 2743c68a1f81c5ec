"""Events appended per second to the durable event log (Postgres).

Each row of the table is one configuration: how many writer threads append to
one session each, and how many events each append call carries. Every event is
committed and announced (the Redis doorbell of the distributed form); the figure
is events / wall-clock seconds.

    .venv/bin/python bench/append_events.py [--events N] [--writers 1 4 8] [--batch 1 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/agent_platform_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379")
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def ensure_database() -> None:
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    admin = f"host={db['HOST']} port={db['PORT'] or 5432} user={db['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')


def run(writers: int, batch: int, events: int) -> float:
    from django.db import connections

    from agent_platform.models import Principal, Tenant
    from agents.events import EventType
    from agents.models import Agent
    from sessions_app.eventlog import NewEvent, append_events
    from sessions_app.models import Session

    tenant, _ = Tenant.objects.get_or_create(slug="bench")
    principal, _ = Principal.objects.get_or_create(tenant=tenant, name="bench")
    agent, _ = Agent.objects.get_or_create(slug="bench-agent", defaults={"path": "/dev/null"})
    sessions = [Session.objects.create(principal=principal, agent=agent) for _ in range(writers)]
    per_writer = events // writers // batch
    payload = [NewEvent(EventType.MESSAGE_APPENDED, {"text": "lorem ipsum dolor"}) for _ in range(batch)]
    start = threading.Barrier(writers + 1)

    def write(session: Session) -> None:
        start.wait()
        for _ in range(per_writer):
            append_events(session.id, payload)
        connections.close_all()

    threads = [threading.Thread(target=write, args=(session,)) for session in sessions]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    for session in sessions:
        indexes = list(session.events.order_by("index").values_list("index", flat=True))
        assert indexes == list(range(per_writer * batch)), "gap or duplicate in the event log"
    return per_writer * batch * writers / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 20])
    args = parser.parse_args()

    import django

    django.setup()
    ensure_database()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(f"{'writers':>8} {'batch':>6} {'events/s':>10}")
    for writers in args.writers:
        for batch in args.batch:
            print(f"{writers:>8} {batch:>6} {run(writers, batch, args.events):>10,.0f}")


if __name__ == "__main__":
    main()
