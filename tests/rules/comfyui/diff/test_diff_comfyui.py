"""Differential tests: ComfyUI's own loading code at the pinned commit 0271a469
(`comfy/quant_ops.py` whole, `comfy/ops.py` `_load_quantized_module`; see loader.py and
real.py) against quantcheck's `comfyui-cpu@0271a469` and `comfyui@0271a469` verdicts, one
generated single-layer checkpoint at a time (`make diff-comfyui`).

Skipped unless QUANTCHECK_DIFF_COMFYUI=1. The code comes from `QUANTCHECK_COMFYUI_SRC` or a
`git fetch` of the pinned commit (source.py), checked against SHA-256 pins before it runs.

The files are read with safe_open, the loader of ComfyUI's `--cpu` (`comfyui-cpu`): that
verdict must equal the outcome of plain inference, and quantcheck warns (QC319) exactly where
ComfyUI's `QuantizedTensor.dequantize()`, which LoRA patching and the full-precision fallback
use, raises on a layer that runs. The default GPU setup (`comfyui`) differs in its safetensors
loader, whose dtype table has no F8_E8M0 (comfy/utils.py load_safetensors, not executed here),
and in running fp8 / NVFP4 / MXFP8 layers on their quantized kernels (not executed: no GPU):
its verdict must equal the outcome, except that a file with an F8_E8M0 tensor must fail and
the cases of `GPU_DIFFERS` must have the verdict recorded there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from safetensors import safe_open

from quantcheck.checking import check_paths

from .cases import AMBIGUOUS, CASES, GPU_DIFFERS, NOT_RUN
from .loader import Comfy, load
from .real import outcome
from .source import COMMIT, tree

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_COMFYUI") != "1",
    reason="set QUANTCHECK_DIFF_COMFYUI=1 (make diff-comfyui)",
)

RELEASE = "0271a469"
#: The warning for a layer whose inference is right but whose dequantize() raises.
LORA_WARNING = "QC319"


@pytest.fixture(scope="module")
def comfy() -> Comfy:
    root = tree()
    if root is None:
        pytest.fail(
            f"no ComfyUI source: set QUANTCHECK_COMFYUI_SRC, or let git fetch {COMMIT} "
            "from GitHub (see tests/rules/comfyui/diff/source.py)"
        )
    return load(root)


def _has_e8m0(path: str) -> bool:
    with safe_open(path, framework="pt") as f:
        return any(str(f.get_slice(k).get_dtype()) == "F8_E8M0" for k in f.keys())  # noqa: SIM118


def test_release_is_the_pin() -> None:
    assert COMMIT.startswith(RELEASE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_comfyui_agrees_with_quantcheck(name: str, comfy: Comfy, tmp_path: Path) -> None:
    if name in NOT_RUN or name in AMBIGUOUS:
        pytest.skip(NOT_RUN.get(name) or AMBIGUOUS[name])
    path, layers = CASES[name](tmp_path)
    real, why, dequantize_fails = outcome(comfy, path, layers)
    cpu_key, gpu_key = f"comfyui-cpu@{RELEASE}", f"comfyui@{RELEASE}"
    report = check_paths([path], target=f"{cpu_key},{gpu_key}")
    cpu = report.target_status(cpu_key)["status"]
    gpu = report.target_status(gpu_key)["status"]
    want_gpu = "fails" if _has_e8m0(path) else GPU_DIFFERS.get(name, (real, ""))[0]
    assert (cpu, gpu) == (real, want_gpu), (
        f"{name}: ComfyUI {RELEASE} with safe_open: {real} ({why}); quantcheck says "
        f"comfyui-cpu {cpu}, comfyui {gpu} (wanted {want_gpu})"
    )
    warned = any(d.code == LORA_WARNING for d in report.diagnostics)
    assert warned == (dequantize_fails and real != "fails"), (
        f"{name}: ComfyUI's dequantize() (LoRA / full-precision fallback) "
        f"{'raises' if dequantize_fails else 'works'} ({why}); quantcheck "
        f"{'warns' if warned else 'does not warn'} ({LORA_WARNING})"
    )
