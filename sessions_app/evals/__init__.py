"""Eval runs on the platform: real eval sessions on Celery workers, runs in Postgres."""
