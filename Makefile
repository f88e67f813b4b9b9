# Two commands for a fresh machine (Python 3.11, pip, make): `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ADAPTERS := $(sort $(dir $(wildcard adapters/*/pyproject.toml)))
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck bench clean

$(STAMP): requirements-dev.txt core/pyproject.toml $(wildcard adapters/*/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q -e "core[all]" $(foreach a,$(ADAPTERS),-e $(a))
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

install: $(STAMP)

demo: install
	$(PY) examples/demo.py

test: install
	$(VENV)/bin/ruff check core/src tests
	$(VENV)/bin/mypy
	$(PY) -m pytest -n 2 --dist loadfile

lint: install
	$(VENV)/bin/ruff check .

typecheck: install
	$(VENV)/bin/mypy

bench: install
	$(PY) bench/bench_core.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
