# The two commands a newcomer needs: `make demo` and `make test`.
# Each creates .venv on first use, installs raystack with its test extra, then runs.
# TORCH_SPEC pins the CPU wheel that lies on this kind of machine's disk; a GPU user sets
# e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126".
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.raystack-installed

.PHONY: demo test bench install clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_SPEC)
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/raystack demo

test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider tests

bench: $(STAMP)
	for b in benchmarks/[a-z]*.py; do $(PY) $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
