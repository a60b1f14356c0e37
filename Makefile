# eosbroker: `make run` starts the broker on 127.0.0.1:9092 with data in ./data
# (`make run HOST=0.0.0.0 PORT=19092 DATA=/var/lib/eosbroker` to change them;
# `make run PROCESSES=4` for four broker processes sharing ./data, with CLUSTER_URL=postgresql://...
# over a cluster database, docs/processes.md);
# `make install-clients` adds the Python clients for the README's examples;
# `make test` installs everything the tests need and runs the whole suite.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 9092
DATA ?= ./data
PROCESSES ?= 1
CLUSTER_URL ?=
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`. Most end-to-end tests wait on clients and brokers, so two at
# a time took 16.5 min on a 2-core machine where one took 26.5. Each test file stays on one worker,
# so a module's fixtures are built once. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2

.PHONY: run test lint install install-clients install-test compile clean
.DEFAULT_GOAL := run

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.created
	$(PIP) install -q -e .
	touch $@

# Everything the suite drives for real: the clients, PySpark (same version as spark/pom.xml).
$(VENV)/.installed-test: pyproject.toml $(VENV)/.created
	$(PIP) install -q -e '.[test,spark]'
	touch $@

# Just the Python clients for the README's examples (confluent-kafka, kafka-python), not the test stack.
$(VENV)/.installed-clients: pyproject.toml $(VENV)/.created
	$(PIP) install -q -e '.[clients]'
	touch $@

install: $(VENV)/.installed

install-clients: $(VENV)/.installed-clients

install-test: $(VENV)/.installed-test

# Bytecode for our own packages. Python still reads .pyc files under PYTHONDONTWRITEBYTECODE, which
# some machines set, but never writes them: each broker process would compile its ~220 modules
# again (~0.5 s of every start; the suite starts hundreds). Up-to-date files are only stat'ed.
compile: $(VENV)/.created
	$(PY) -m compileall -q -j0 broker coordinator protocol storage pipeline bench tests

run: install compile
	$(PY) -m broker --host $(HOST) --port $(PORT) --data-dir $(DATA) --processes $(PROCESSES) \
	  $(if $(CLUSTER_URL),--set cluster.url=$(CLUSTER_URL))

# Extra targets (spark-jars, demo, bench) live in mk/*.mk; test runs after their prerequisites.
-include mk/*.mk

# kafka-dist: kafka-clients 4.4 for the Java admin check (tests/e2e/test_java_admin.py).
# --durations=40 and tests/time_report.py: every run's log ends with its 40 slowest test phases
# (setup, call, teardown), its slowest files and when each worker finished.
test: install-test spark-jars kafka-dist compile
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40 $(PYTEST_ARGS)

# mypy's files and strictness are in pyproject.toml ([tool.mypy]); tests/test_types.py runs it too.
lint: install-test
	$(VENV)/bin/ruff check broker protocol storage coordinator pipeline bench tests tools
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build *.egg-info
