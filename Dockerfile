# Agent Platform, distributed form: one image for web (daphne), celery worker and beat.
# The last stage (app) is what a plain `docker build .` and compose's services build;
# the `test` stage is the test suite's image (compose's `tests` service, profile test).
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PLATFORM_VAR_DIR=/app/var

WORKDIR /app

# Dependencies first so code edits do not invalidate this layer.
# psycopg[binary] bundles libpq: no apt packages needed.
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
# The extension packages shipped in extensions/ (the support example mounts shop).
COPY extensions/ extensions/
RUN pip install --no-cache-dir ./extensions/*/
# The Python client (clients/python): `agent run --url` uses it.
COPY clients/ clients/
RUN pip install --no-cache-dir ./clients/python

# Runs unprivileged, as the app stage does; settings create dirs under var/ at import.
RUN useradd --system --create-home --uid 10001 app


# The test suite: `docker compose --profile test run --rm tests` (docs/testing.md).
FROM base AS test

# The suite's own tools: Debian's chromium for the browser tests, and the Postgres
# and Redis server binaries the restart tests (and a bare `docker run` of this
# image, through scripts/test_services.py) start servers from.
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium redis-server postgresql make \
    && rm -rf /var/lib/apt/lists/*

COPY requirements-dev.txt .
RUN pip install --no-cache-dir -r requirements-dev.txt

# What `make test` sets; compose's tests service points the URLs at its own servers.
ENV DATABASE_URL=postgres://postgres@127.0.0.1:5432/agent_platform \
    REDIS_URL=redis://127.0.0.1:6379/0 \
    SECRET_KEY=test-only-not-secret \
    DB_CONN_MAX_AGE=0

COPY --chown=app:app . .
RUN mkdir -p /app/var && chown app:app /app /app/var
USER app

# Compose's Postgres and Redis answer, so they are used; a bare `docker run` of this
# image starts throwaway servers inside the container instead.
ENTRYPOINT ["python", "scripts/test_services.py"]
CMD ["python", "-m", "pytest"]


FROM base AS app

COPY . .
# The agents served are not the image's: compose bind-mounts AGENTS_DIR here
# (docker run -v "$PWD/examples:/agents:ro" ... likewise).
ENV AGENTS_DIR=/agents

# Settings refuse to load in the distributed form without SECRET_KEY, and
# DATABASE_URL selects Postgres; collectstatic never connects, so dummy values
# scoped to this one RUN line are enough (they are not baked into the image).
RUN DATABASE_URL=postgres://build:build@localhost:5432/build \
    SECRET_KEY=build-only-not-secret \
    python manage.py collectstatic --noinput

RUN mkdir -p /app/var/workspaces /agents \
    && chown -R app:app /app/var
USER app

EXPOSE 8000

# curl is not in slim; probe with the stdlib. Compose overrides this for worker/beat.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "--websocket-max-message-size", "65536", "agent_platform.asgi:application"]
