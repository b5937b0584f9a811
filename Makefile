# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_BASE := $(VENV)/.stamp-base

.PHONY: demo test lint typecheck bench examples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP_BASE): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,oracle]'
	touch $@ $(STAMP_BASE)

demo: $(STAMP_BASE)
	@$(BIN)/python examples/demo.py

test: $(STAMP_DEV) typecheck
	$(BIN)/ruff check src tests benchmarks examples
	@echo "numeric contract with torch's baseline kernels, one thread everywhere:"
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 QUANTCHECK_THREADS=1 \
	  $(BIN)/python -m pytest -q -p no:cacheprovider tests/numeric
	$(BIN)/python -m pytest -q

lint: $(STAMP_DEV) typecheck
	$(BIN)/ruff check src tests benchmarks examples

typecheck: $(STAMP_DEV)
	$(BIN)/mypy src

examples: $(STAMP_DEV)
	$(BIN)/python examples/make_examples.py examples

bench: $(STAMP_DEV)
	$(BIN)/python benchmarks/bench_check.py

clean:
	rm -rf $(VENV) build src/*.egg-info
