# tdweb — the README's commands. Every target installs what it needs first.
#   make demo [ONCE=1] [SPEED=3600]   the main job on the real data (web, workers, beat, Redis)
#   make up                            the services with no demo data
#   make test                          the whole test suite (what .ci/run calls)
#   make sql-docs                      regenerate docs/sql.md from spark_workers/sql/reference.py

SHELL := /bin/bash
PY ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PTH := spark_workers/runtime/tdweb_pyspark_site.pth
FRONTEND_SRC := $(shell find frontend/src -type f 2>/dev/null) frontend/package.json frontend/package-lock.json frontend/vite.config.ts frontend/tsconfig.json
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/tdweb

.PHONY: install demo up test lint typecheck checks test-python test-frontend test-postgres browser-deps bench sql-docs clean

install: $(STAMP) $(VENV)/.pyspark-site frontend/dist/manifest.json

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "tdweb needs Python 3.11+, found " + sys.version)'
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Spark's Python processes import pyspark from the installed package, not its zip (the file says why)
$(VENV)/.pyspark-site: $(PTH) $(STAMP)
	cp $(PTH) "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
	touch $@

frontend/dist/manifest.json: $(FRONTEND_SRC)
	cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent

demo: install
	$(BIN)/python manage.py demo $(if $(ONCE),--once) $(if $(SPEED),--speed $(SPEED))

up: install
	$(BIN)/python manage.py up

# Debian's Chromium for the browser tests (the only way to get a browser here: tools' own downloads fail)
browser-deps:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi; }

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check spark_workers streams_app tdweb tests bench
	$(BIN)/lint-imports --no-cache

typecheck: install
	$(BIN)/mypy spark_workers streams_app tdweb

checks: install
	$(BIN)/python .ci/check-deploy  # check --deploy --fail-level WARNING under docs/security.md's production variables
	$(BIN)/python manage.py check --fail-level WARNING
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file var/openapi.yml
	cd frontend && npx --no-install openapi-typescript ../var/openapi.yml -o /tmp/tdweb-schema.d.ts >/dev/null \
	  && diff -q /tmp/tdweb-schema.d.ts src/api/schema.d.ts >/dev/null \
	  || { echo 'frontend API types are stale: run npm run gen:api (in frontend/)'; exit 1; }

test-frontend: install
	cd frontend && npm run --silent typecheck && npm test --silent

test-python: install browser-deps
	$(BIN)/pytest -q

test-postgres: install
	@if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || $(BIN)/python -c 'import socket; socket.create_connection(("127.0.0.1", 5432), 2)' 2>/dev/null; then \
	  DATABASE_URL=$(PG_TEST_URL) $(BIN)/pytest -q -m "not spark and not browser" tests/web; \
	else echo "PostgreSQL not reachable at 127.0.0.1:5432: PostgreSQL run skipped"; fi

test: lint checks typecheck test-frontend test-python test-postgres

# docs/sql.md is generated from the SQL reference catalogue (tests/sql/test_reference.py checks it)
sql-docs: install
	$(BIN)/python -m spark_workers.sql.reference > docs/sql.md

bench: install
	$(BIN)/python bench/engine_bench.py
	$(BIN)/python bench/stream_bench.py

clean:
	rm -rf var frontend/dist .pytest_cache .mypy_cache .ruff_cache
