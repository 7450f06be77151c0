# The few commands everyone runs. `make demo` and `make test` create the project venv (.venv, from
# python3.11 or python3) and install the package into it on first use; PYTHON is that venv.
VENV := .venv
PYTHON ?= $(VENV)/bin/python
BOOTSTRAP_PYTHON ?= $(shell command -v python3.11 || command -v python3 || command -v python)
SOURCES := $(wildcard sim service workers tests bench)
# The suite mostly waits (on redis-server, worker subprocesses, gRPC, network faults that last a
# minute), so test processes in parallel (pytest-xdist) overlap the waits even on two cores: with 4
# processes the two cores were busy two thirds of the time (331 s), with 6 the suite takes 265 s and
# still passes beside a CPU burner (321 s). loadgroup keeps the tests of one `xdist_group` (which
# share one compile) on one process. PYTEST_PARALLEL= (empty) runs everything in one process.
PYTEST_PARALLEL ?= -n 6 --dist loadgroup

.PHONY: install test test-all lint format bench demo venv

# The package with its runtime dependencies (enough for the demo), then with the test extras.
$(VENV)/.installed: pyproject.toml
	@[ -x $(VENV)/bin/python ] || $(BOOTSTRAP_PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

venv: $(VENV)/.installed-test  ## create .venv with the package and its test extras

demo: $(VENV)/.installed  ## the README's first command: a demo batch through gRPC, Celery and Redis
	$(VENV)/bin/azulsim demo

# With the default PYTHON, targets that need the test extras (pytest, ruff) create .venv first; with
# PYTHON=/some/python they use that interpreter as it is.
NEEDS_VENV := $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/.installed-test)

install: $(NEEDS_VENV)  ## editable install with the test and lint tools (creates .venv on a fresh clone)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[dev]'

test: $(NEEDS_VENV)  ## the README's test command: everything but the slow checks
	$(PYTHON) -m pytest -q -m "not slow" $(PYTEST_PARALLEL)

test-all: $(NEEDS_VENV)  ## every test, slow ones included
	$(PYTHON) -m pytest -q

lint: $(NEEDS_VENV)  ## ruff (rules in pyproject.toml; ruff is one of the test extras)
	$(PYTHON) -m ruff check $(SOURCES)

format: $(NEEDS_VENV)  ## ruff format, in place
	$(PYTHON) -m ruff format $(SOURCES)

bench:  ## every benchmark; each prints its figures and writes them under bench/results/
	$(PYTHON) bench/engine.py            # random play on one core, 2 and 4 players
	$(PYTHON) bench/simulate_scaling.py  # azulsim simulate, 1 vs 2 workers, 1M greedy games
	$(PYTHON) bench/ladder.py            # bot strength ladder and throughput (docs/bots.md)
	$(PYTHON) bench/chunk_overhead.py    # counting + Lua merge cost per chunk
	$(PYTHON) bench/service.py           # 2M games end to end through gRPC, Celery and Redis
	$(PYTHON) bench/load.py              # 50 clients, 1,000 jobs
	$(PYTHON) bench/first_run.py         # the README's first command (make demo) from a fresh clone
