# Agent Platform, distributed form: one image for web (daphne), celery worker and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PLATFORM_VAR_DIR=/app/var

WORKDIR /app

# Dependencies first so code edits do not invalidate this layer.
# psycopg[binary] bundles libpq: no apt packages needed.
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .

# Settings refuse to load in the distributed form without SECRET_KEY, and
# DATABASE_URL selects Postgres; collectstatic never connects, so dummy values
# scoped to this one RUN line are enough (they are not baked into the image).
RUN DATABASE_URL=postgres://build:build@localhost:5432/build \
    SECRET_KEY=build-only-not-secret \
    python manage.py collectstatic --noinput

# Run unprivileged; settings create dirs under var/ at import, so it must be ours.
RUN useradd --system --create-home --uid 10001 app \
    && mkdir -p /app/var/workspaces \
    && chown -R app:app /app/var
USER app

EXPOSE 8000

# curl is not in slim; probe with the stdlib. Compose overrides this for worker/beat.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "--websocket-max-message-size", "65536", "agent_platform.asgi:application"]
