# Two commands on a fresh machine:
#   make run    create .venv, install, migrate, serve the example agents on http://127.0.0.1:8000/
#   make test   install the test tools too, and run the whole suite against Postgres and Redis
#               (throwaway ones of its own when nothing answers on the URLs below)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

# The suite runs against real servers; override these to point elsewhere. When one
# does not answer, scripts/test_services.py starts a throwaway server in its place
# for the run (docs/testing.md).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/agent_platform
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
# The whole suite runs in TEST_WORKERS processes (pytest-xdist), each with its own test
# database, worker queue and servers; one file's tests stay in one process (they share
# module fixtures). Three on two cores: much of the suite waits on servers and clocks.
# PYTEST_ARGS replaces this: a subset runs in one process.
TEST_WORKERS ?= 3
PYTEST_ARGS ?= -n $(TEST_WORKERS) --dist loadfile

# The extension packages shipped in extensions/ (the support example mounts shop), installed
# as any extension package is; again whenever a file of theirs changes.
EXTENSION_PACKAGES := $(wildcard extensions/*/pyproject.toml)
EXTENSION_FILES := $(shell find extensions -type f -not -path '*/build/*' -not -path '*.egg-info*' -not -name '*.pyc' 2>/dev/null)

# The Python client (clients/python, its own package; `agent run --url` uses it), installed
# like the extension packages, again whenever a file of its changes.
CLIENT_FILES := $(shell find clients/python -type f -not -path '*/build/*' -not -path '*.egg-info*' -not -name '*.pyc' 2>/dev/null)

INSPECTOR := tools/mcp-inspector/node_modules/.bin/mcp-inspector

.PHONY: run test check lint typecheck migrations-check clean mcp-inspector

# The first `make run` installs for a minute or two: it says so and shows pip's progress
# (each package, with a progress bar on a terminal). `make test` stays quiet (CI logs).
$(PY):
	@echo "Creating $(VENV) and installing the platform's dependencies (the first time takes a minute or two)..."
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.run-installed: requirements.txt | $(PY)
	$(PY) -m pip install --progress-bar on -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.run-installed

$(VENV)/.extensions-installed: $(EXTENSION_FILES) | $(PY)
	$(PY) -m pip install --quiet $(addprefix ./,$(dir $(EXTENSION_PACKAGES)))
	touch $@

$(VENV)/.client-installed: $(CLIENT_FILES) | $(PY)
	$(PY) -m pip install --quiet ./clients/python
	touch $@

run: $(VENV)/.run-installed $(VENV)/.extensions-installed $(VENV)/.client-installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py agent serve --host $(HOST) --port $(PORT)

# DB_CONN_MAX_AGE=0: connections opened by worker and async-bridge threads close
# after use, so the test database can be dropped at the end of the run.
# The MCP Inspector CLI (npm) for the /v1/mcp test, installed wherever npm is.
test: $(VENV)/.dev-installed $(VENV)/.extensions-installed $(VENV)/.client-installed $(if $(shell command -v npm),$(INSPECTOR))
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=test-only-not-secret DB_CONN_MAX_AGE=0 \
		$(PY) scripts/test_services.py $(PY) -m pytest $(PYTEST_ARGS)

# The MCP Inspector's CLI (npm, Node 20) for the /v1/mcp test; without it that test is skipped.
$(INSPECTOR): tools/mcp-inspector/package.json tools/mcp-inspector/package-lock.json
	cd tools/mcp-inspector && npm ci --no-audit --no-fund --loglevel=error
	touch $@
mcp-inspector: $(INSPECTOR)

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.dev-installed
	$(VENV)/bin/mypy .

migrations-check: $(VENV)/.dev-installed
	$(PY) manage.py makemigrations --check --dry-run

check: lint typecheck migrations-check

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
