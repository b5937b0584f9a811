# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_BASE := $(VENV)/.stamp-base

.PHONY: demo test lint typecheck bench examples clean diff-sglang diff-consumers diff-comfyui diff-musubi regen test-comfyui-integration

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
	$(BIN)/ruff check src tests benchmarks examples docs tools integrations
	$(BIN)/ruff format --check src tests benchmarks examples docs tools integrations
	@echo "numeric contract with torch's baseline kernels, one thread everywhere:"
	ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 QUANTCHECK_THREADS=1 \
	  $(BIN)/python -m pytest -q -p no:cacheprovider tests/numeric
	$(BIN)/python -m pytest -q

lint: $(STAMP_DEV) typecheck
	$(BIN)/ruff check src tests benchmarks examples docs tools integrations
	$(BIN)/ruff format --check src tests benchmarks examples docs tools integrations

typecheck: $(STAMP_DEV)
	$(BIN)/mypy src

examples: $(STAMP_DEV)
	$(BIN)/python examples/make_examples.py examples

bench: $(STAMP_DEV)
	$(BIN)/python benchmarks/bench_check.py

# The differential suites: each runs a runtime's own code, from the `diff/` folder of its tests
# (tests/rules/<runtime>/diff/), and is skipped by `make test` unless its QUANTCHECK_DIFF_* is 1.

# sglang 0.5.18-0.5.23's own marker code (and 0.5.23's LoRA wrapper and merge decision) against
# quantcheck's per-release verdicts. Downloads the six pinned wheels (~180 MB) once into
# ~/.cache/quantcheck/sglang-wheels (or $QUANTCHECK_SGLANG_WHEELS); needs torch (CPU) and safetensors.
diff-sglang: $(STAMP_DEV)
	QUANTCHECK_DIFF_SGLANG=1 $(BIN)/python -m pytest -q tests/rules/sglang/diff

# InvokeAI 6.14.2's and DiffSynth-Studio 2.1.12's own loader functions against quantcheck's
# invokeai/diffsynth verdicts, and their LoRA code (with SD.Next d11a619's SDNQ quantizer)
# against `quantcheck lora`. Downloads the two pinned wheels (~14 MB) once into
# ~/.cache/quantcheck/consumer-wheels (or $QUANTCHECK_CONSUMER_WHEELS) and SD.Next's
# modules/sdnq from $QUANTCHECK_SDNEXT_SRC or a `git fetch` of the commit (pinned by SHA-256);
# needs torch (CPU), safetensors and comfy-kitchen (the `oracle` extra).
diff-consumers: $(STAMP_DEV)
	QUANTCHECK_DIFF_CONSUMERS=1 $(BIN)/python -m pytest -q \
	  tests/rules/invokeai/diff tests/rules/diffsynth/diff tests/rules/sdnext/diff

# musubi-tuner's own checks against quantcheck's musubi verdicts, per modelled release:
# 0.3.6's loaders (ConvRotInt8Quantizer.load_and_quantize, load_h3_text_encoder with
# NvFp4Quantizer, classify_h3_transformer) on every rule case and on generated files of every
# format, from $QUANTCHECK_MUSUBI_036_SRC; 725869d's inspect_convrot_int8_artifact on every rule
# case and PR #1024's MiniMax H3 text-encoder topology check against QC864, from
# $QUANTCHECK_MUSUBI_SRC (folders with src/musubi_tuner/...; every definition that runs must
# match its SHA-256 pin in tests/rules/musubi/diff/source.py). Needs torch (CPU).
diff-musubi: $(STAMP_DEV)
	QUANTCHECK_DIFF_MUSUBI=1 $(BIN)/python -m pytest -q tests/rules/musubi/diff

# ComfyUI's own loading code at the pinned commit 0271a469 (comfy/quant_ops.py,
# comfy/ops.py _load_quantized_module and get_disabled_quant_formats) against quantcheck's
# comfyui-cpu@0271a469 / comfyui@0271a469 verdicts. The code comes from $QUANTCHECK_COMFYUI_SRC
# (a folder with comfy/quant_ops.py and comfy/ops.py) or a `git fetch --depth 1` of the commit
# from GitHub, cached in ~/.cache/quantcheck/comfyui (or $QUANTCHECK_COMFYUI_CACHE); what runs
# must match the SHA-256 pins in tests/rules/comfyui/diff/source.py. Needs torch (CPU),
# safetensors and comfy-kitchen (the `oracle` extra).
diff-comfyui: $(STAMP_DEV)
	QUANTCHECK_DIFF_COMFYUI=1 $(BIN)/python -m pytest -q tests/rules/comfyui/diff

# ComfyUI started for real with the node pack (integrations/comfyui; docs/comfyui.md).
# COMFYUI_SRC: a full ComfyUI checkout (main.py); COMFYUI_VENV: a venv outside the repository,
# built once with ComfyUI's requirements from PyPI (torch 2.14.1 + torchvision 0.29.1, which
# run with --cpu) and this quantcheck.
COMFYUI_VENV ?= $(HOME)/.cache/quantcheck/comfyui-venv
test-comfyui-integration: $(STAMP_DEV)
	@test -n "$(COMFYUI_SRC)" || { echo "set COMFYUI_SRC=/path/to/ComfyUI"; exit 2; }
	test -x $(COMFYUI_VENV)/bin/python || { $(PYTHON) -m venv $(COMFYUI_VENV) && \
	  $(COMFYUI_VENV)/bin/pip install -q torch==2.14.1 torchvision==0.29.1 && \
	  printf 'torch==2.14.1\ntorchvision==0.29.1\n' > $(COMFYUI_VENV)/pins.txt && \
	  $(COMFYUI_VENV)/bin/pip install -q -r $(COMFYUI_SRC)/requirements.txt -c $(COMFYUI_VENV)/pins.txt; }
	$(COMFYUI_VENV)/bin/pip install -q -e .
	QUANTCHECK_COMFYUI_LIVE=1 QUANTCHECK_COMFYUI_FULL=$(COMFYUI_SRC) \
	  QUANTCHECK_COMFYUI_PYTHON=$(COMFYUI_VENV)/bin/python \
	  $(BIN)/python -m pytest -q tests/integrations/test_comfyui_live.py

clean:
	rm -rf $(VENV) build src/*.egg-info

regen: $(STAMP_DEV)
	$(BIN)/python tools/regen.py
