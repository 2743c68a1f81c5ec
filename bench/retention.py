"""The time of a retention pass (``sessions_app.records.retention.run_retention``) over
100,000 events of sessions past their retention, beside as many events of sessions
that are kept (so the pass has to tell them apart, as in life).

The rows are made with bulk SQL (``generate_series``), not through the API: the figure
is the pass, not the making. Printed: the pass's wall time, events deleted per second,
and the longest single delete transaction (what live traffic could wait behind).

    .venv/bin/python bench/retention.py [--events 100000] [--per-session 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/agent_platform_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379")
os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def generate(prefix: str, sessions: int, per_session: int, idle_days: int) -> None:
    """``sessions`` waiting sessions idle for ``idle_days``, a completed turn and
    ``per_session`` events each, in three INSERT ... SELECT statements."""
    from django.db import connection

    from agent_platform.models import Principal, Tenant
    from agents.registry import get_agent
    from sessions_app.models import Event, Session, Turn

    tenant, _ = Tenant.objects.get_or_create(slug="bench-retention")
    principal, _ = Principal.objects.get_or_create(tenant=tenant, name="bench")
    agent = get_agent("weather")
    assert agent is not None, "the weather example must be in AGENTS_DIR"
    # Table names are the models' own; the values are parameters.
    sql_sessions = """
        INSERT INTO {sessions} (id, tenant_id, agent_id, principal_id, channel, mode, purpose, status,
            title, continuation_key, dry_run, forked_from, next_event_index, dispatched_index, created_at, updated_at)
        SELECT %(prefix)s || g, %(tenant)s, %(agent)s, %(principal)s, 'http', 'chat', 'live', 'waiting', '', '',
            false, '', %(n)s, %(n)s - 1, now() - make_interval(days => %(days)s),
            now() - make_interval(days => %(days)s)
        FROM generate_series(1, %(sessions)s) g"""
    sql_turns = """
        INSERT INTO {turns} (id, session_id, message, admission, status, attempts, created_at,
            started_at, ended_at, usage, failure_message, attachments, cancel_requested, conversation, request_id)
        SELECT 'turn_' || %(prefix)s || g, %(prefix)s || g, 'hello', 'preempt', 'completed', 1, now(), now(), now(),
            '{{}}', '', '{{}}', false, '[]', ''
        FROM generate_series(1, %(sessions)s) g"""
    sql_events = """
        INSERT INTO {events} (session_id, "index", type, turn_id, at, data)
        SELECT %(prefix)s || g, i, 'message.appended', 'turn_' || %(prefix)s || g, now(),
            '{{"text": "lorem ipsum dolor sit amet"}}'::jsonb
        FROM generate_series(1, %(sessions)s) g, generate_series(0, %(n)s - 1) i"""
    params = {
        "prefix": prefix,
        "tenant": tenant.pk,
        "agent": agent.pk,
        "principal": principal.pk,
        "n": per_session,
        "days": idle_days,
        "sessions": sessions,
    }
    with connection.cursor() as cursor:
        for sql in (sql_sessions, sql_turns, sql_events):
            tables = {"sessions": Session._meta.db_table, "turns": Turn._meta.db_table, "events": Event._meta.db_table}
            cursor.execute(sql.format(**tables), params)
        cursor.execute(f"ANALYZE {Event._meta.db_table}; ANALYZE {Session._meta.db_table}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--per-session", type=int, default=100)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from sessions_app.models import Event, Session
    from sessions_app.records import retention

    sessions = max(1, args.events // args.per_session)
    generate("ses_benchdue", sessions, args.per_session, idle_days=400)  # past the platform's 90 days
    generate("ses_benchkept", sessions, args.per_session, idle_days=10)
    longest = 0.0
    remove = retention.remove_sessions

    def timed_remove(*a: object, **k: object) -> tuple[int, int]:
        nonlocal longest
        began = time.perf_counter()
        try:
            return remove(*a, **k)  # type: ignore[arg-type]
        finally:
            longest = max(longest, time.perf_counter() - began)

    retention.remove_sessions = timed_remove  # type: ignore[assignment]
    began = time.perf_counter()
    report = retention.run_retention()
    elapsed = time.perf_counter() - began
    kept = Event.objects.filter(session__id__startswith="ses_benchkept").count()
    assert report.events == sessions * args.per_session, report.as_dict()
    assert kept == sessions * args.per_session and not Session.objects.filter(pk__startswith="ses_benchdue").exists()
    print(f"{'events':>8} {'sessions':>9} {'seconds':>8} {'events/s':>10} {'longest tx ms':>14}")
    rate = report.events / elapsed
    print(f"{report.events:>8} {report.sessions:>9} {elapsed:>8.2f} {rate:>10,.0f} {longest * 1000:>14.0f}")


if __name__ == "__main__":
    main()
