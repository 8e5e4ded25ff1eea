# attnscope: `make run` serves on http://127.0.0.1:8000, `make test` runs lint, types and the whole suite,
# `make bench` prints the performance tables (bench/results.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -qq

.PHONY: run lint chromium test test-all test-fast test-explore test-js coverage golden bench clean

# The browser tests drive Debian's Chromium headless shell (bench/common.py); `make test` installs it when it is
# missing (as root), or says how.
CHROMIUM := /usr/bin/chromium-headless-shell
# Property tests draw from a seed fixed per commit (printed in pytest's header), so a commit passes or fails
# the same way on every machine; `make test-explore` draws afresh with many more examples.
SEED := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo 0)
PYTEST := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest

# torch first, from the CPU build this machine provides, so nothing pulls a CUDA build.
$(VENV)/.torch:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	touch $@

$(VENV)/.app: $(VENV)/.torch pyproject.toml
	$(PIP) -e .
	touch $@

# The test extra installs the app too: one pip run on a clean clone, not two.
$(VENV)/.test: $(VENV)/.torch pyproject.toml
	$(PIP) -e '.[test]'
	touch $@ $(VENV)/.app

run: $(VENV)/.app
	$(VENV)/bin/attnscope serve

# ruff (lint and import order) over every Python file, mypy over app/ and model/ (pyproject.toml).
lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

chromium:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; \
	  else \
	    echo "make test needs Debian's Chromium headless shell at $(CHROMIUM): run  sudo apt-get install -y chromium-headless-shell"; exit 1; \
	  fi; }
	@$(CHROMIUM) --version

# The whole suite: what CI runs, timed (the budget, 15 minutes from a clean clone on a quiet 2-core machine, and
# what each part costs are in docs/development.md). Two workers (pytest-xdist), each taking whole test files, so
# a file's server and browser fixtures start once: most of the suite waits on a browser or a server process.
WORKERS ?= 2
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory test-all; status=$$?; took=$$(( $$(date +%s) - start )); \
	  echo "make test took $$((took / 60)) min $$((took % 60)) s (budget: 15 min from a clean clone, docs/development.md)"; \
	  exit $$status

test-all: chromium $(VENV)/.test lint test-js
	$(PYTEST) -n $(WORKERS) --dist loadfile --hypothesis-profile=ci --hypothesis-seed=$(SEED)

# The inner loop: unit, API and CLI tests, no browser and no server processes.
test-fast: $(VENV)/.test
	$(PYTEST) --hypothesis-profile=ci --hypothesis-seed=$(SEED) tests/model tests/api tests/cli tests/python tests/static tests/test_suite.py

# The pure front-end modules (static/js/figures, the URL and error helpers) under Node's own test runner.
test-js:
	node --test tests/js/

# Every property test with many more examples and a fresh seed; failures print the seed to replay.
test-explore: $(VENV)/.test
	$(PYTEST) --hypothesis-profile=explore -m hypothesis tests

# Records the API answers tests/api/test_golden.py holds the code to (tests/golden/__init__.py): only for a
# change meant to change answers.
golden: $(VENV)/.test
	rm -rf .golden-checkpoints && $(VENV)/bin/python -m tests.golden .golden-checkpoints && rm -rf .golden-checkpoints

# Line coverage of app/, model/ and attnscope/ by the whole suite (in-process code only: the servers the
# service and browser tests start are separate processes).
coverage: chromium $(VENV)/.test
	$(PYTEST) -n $(WORKERS) --dist loadfile --hypothesis-profile=ci --hypothesis-seed=$(SEED) \
	  --cov=app --cov=model --cov=attnscope --cov-report=term

bench: $(VENV)/.test
	command -v wrk >/dev/null || { echo "bench needs wrk: apt-get install wrk"; exit 1; }
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .coverage .coverage.*
