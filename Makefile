# The two commands a newcomer needs: `make demo` and `make test`.
# Each creates .venv on first use, installs raystack with its test extra, then runs.
#
# torch: PyPI's Linux wheel of torch bundles CUDA (several GB). On a CPU machine `make` takes
# the CPU build from PyTorch's CPU index instead, when that index answers; where it does not
# (no internet, a local wheel mirror in pip's own config) pip installs from its configured
# sources as usual. A GPU user sets the CUDA index, e.g.
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cu126
# or installs torch beforehand (a torch==$(TORCH_VERSION) already installed is kept).
PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# "--index-url TORCH_INDEX" if the index answers within 5 s, else nothing (evaluated only when installing)
TORCH_INDEX_ARGS = $(shell $(PYTHON) -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1].rstrip('/') + '/torch/', timeout=5)" "$(TORCH_INDEX)" >/dev/null 2>&1 && echo "--index-url $(TORCH_INDEX)")
TORCH_SPEC ?= torch==$(TORCH_VERSION) $(TORCH_INDEX_ARGS)
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

# Every Ray worker, notebook kernel and script the tests start imports raystack; where
# PYTHONDONTWRITEBYTECODE is set (as on the CI machine) each would compile its sources again
# (~0.4 CPU-s a process, a few hundred processes): compile them once first.
test: $(STAMP)
	$(PY) -m compileall -q -j 0 raystack apps benchmarks > /dev/null
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadscope --durations=30 tests

bench: $(STAMP)
	for b in benchmarks/[a-z]*.py; do $(PY) $$b || exit 1; done

clean-venv:
	rm -rf $(VENV)
