# The few commands everyone runs. PYTHON is the project venv when there is one.
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
SOURCES := $(wildcard sim service workers tests bench)

.PHONY: install test test-all lint format bench

install:  ## editable install with test and lint tools
	$(PYTHON) -m pip install -e '.[dev]'

test:  ## the README's test command: everything but the slow checks
	$(PYTHON) -m pytest -q -m "not slow"

test-all:  ## every test, slow ones included
	$(PYTHON) -m pytest -q

lint:  ## ruff (rules in pyproject.toml)
	$(PYTHON) -m ruff check $(SOURCES)

format:  ## ruff format, in place
	$(PYTHON) -m ruff format $(SOURCES)

bench:  ## every bench/bench_*.py; each writes its figures under bench/results/
	@set -e; found=0; for f in bench/bench_*.py; do \
		[ -e "$$f" ] || continue; found=1; echo "== $$f"; $(PYTHON) "$$f"; done; \
	[ "$$found" = 1 ] || echo "no benchmarks in bench/ yet"
