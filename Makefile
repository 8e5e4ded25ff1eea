# attnscope: `make run` serves on http://127.0.0.1:8000, `make test` runs lint, types and the whole suite,
# `make bench` prints the performance tables (bench/results.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -qq

.PHONY: run lint test bench clean

# torch first, from the CPU build this machine provides, so nothing pulls a CUDA build.
$(VENV)/.torch:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	touch $@

$(VENV)/.app: $(VENV)/.torch pyproject.toml
	$(PIP) -e .
	touch $@

$(VENV)/.test: $(VENV)/.app pyproject.toml
	$(PIP) -e '.[test]'
	touch $@

run: $(VENV)/.app
	$(VENV)/bin/attnscope serve

# ruff (lint and import order) over every Python file, mypy over app/ and model/ (pyproject.toml).
lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: $(VENV)/.test lint
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest

bench: $(VENV)/.test
	command -v wrk >/dev/null || { echo "bench needs wrk: apt-get install wrk"; exit 1; }
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m bench.run

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
