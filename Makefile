# Two commands for a fresh machine (Python 3.11, pip, make): `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
ADAPTERS := $(patsubst %/pyproject.toml,%,$(wildcard adapters/*/pyproject.toml))
STAMP := $(VENV)/.installed

.PHONY: install fast-path demo notebooks test screenshots test-matrix lint typecheck bench clean

# requirements-dev.txt pins torch (core's extras state a range); `-c` holds that pin while the
# extras install, so this venv gets exactly that torch, the one this machine has on disk.
$(STAMP): requirements-dev.txt core/pyproject.toml compat_matrix.yaml $(wildcard adapters/*/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q -c requirements-dev.txt -e "core[all]" $(foreach a,$(ADAPTERS),-e "$(a)[test]") $$($(PY) scripts/compat.py pins latest)
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

install: $(STAMP)

# The fast embedding path (ONNX, no torch import: a recall process starts in well under a second),
# built once into polymem's data folder; every later process's default embedder uses it.
fast-path: install
	$(VENV)/bin/polymem model export --if-missing

demo: install fast-path
	$(PY) examples/cross_framework.py
	$(PY) examples/demo.py

# Run the example notebooks and save them with their outputs (what a reader sees on GitHub).
notebooks: install
	$(PY) scripts/notebooks.py

# The whole suite in .venv (every adapter at the latest versions), then each adapter alone at the
# lowest versions of its framework, in its own .venv-matrix/<adapter>-lowest (built with uv, rebuilt
# when compat_matrix.yaml or a pyproject changes): both ends of compat_matrix.yaml. The web page's
# tests (tests/ui) drive a Chromium that scripts/browser.py finds or installs (apt, else npm).
test: install
	$(VENV)/bin/ruff check core/src tests scripts bench
	$(VENV)/bin/mypy
	chromium="$$($(PY) scripts/browser.py)" && POLYMEM_CHROMIUM="$$chromium" OMP_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadfile
	$(PY) scripts/compat.py run --end lowest

# The README's pictures of the web page (docs/img/ui-*.png), taken by its browser tests.
screenshots: install
	chromium="$$($(PY) scripts/browser.py)" && POLYMEM_CHROMIUM="$$chromium" POLYMEM_SCREENSHOTS=1 $(PY) -m pytest tests/ui -q

# Every row of compat_matrix.yaml: each adapter alone at its lowest and at its latest versions.
test-matrix: install
	$(PY) scripts/compat.py run

lint: install
	$(VENV)/bin/ruff check .

typecheck: install
	$(VENV)/bin/mypy

BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: bench/requirements-bench.txt core/pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q torch==2.13.0
	$(BENCH_VENV)/bin/pip install -q -e "core[local,onnx,export,postgres]" -r bench/requirements-bench.txt
	touch $@

bench: install $(BENCH_VENV)/.installed
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .venv-matrix .pytest_cache .mypy_cache .ruff_cache
