"""benchmarks/gpu_check.py on a machine without CUDA: it skips with one line and exit 0, and
its comparison logic (what ran -> a mode -> agreement with quantcheck's GPU entry) and its
dispatch wrapping are right (issue 24 item 5)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses resolve the module's annotations there
    spec.loader.exec_module(module)
    return module


gpu_check = _load()
Events = gpu_check.Events


def _torch(cuda: bool) -> Any:
    return types.SimpleNamespace(
        __version__="9.9", cuda=types.SimpleNamespace(is_available=lambda: cuda)
    )


def test_skip_reasons() -> None:
    assert gpu_check.skip_reason(None) == "torch is not installed"
    assert gpu_check.skip_reason(_torch(False)) == "no CUDA device (torch 9.9)"
    assert gpu_check.skip_reason(_torch(True)) is None


def test_without_cuda_it_prints_one_line_and_exits_0() -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the script would run")
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "gpu_check: skipped: no CUDA device (torch " + torch.__version__ + ")"
    ]


@pytest.mark.parametrize(
    ("events", "mode"),
    [
        (Events(error="NoCapableBackendError: ..."), "refused"),
        (Events(dequantized=True, backends=[("int8_linear", "cuda")]), "emulated"),
        (Events(fallbacks=["FP8 _scaled_mm failed: ..., falling back"]), "emulated"),
        (Events(backends=[("quantize_int8_rowwise", "cuda"), ("int8_linear", "cuda")]), "native"),
        (Events(backends=[("int8_linear", "eager")], torch_kernels=["torch._int_mm"]), "native"),
        (Events(backends=[("convrot_w4a4_linear", "eager")]), "emulated"),
        (Events(backends=[("gemv_awq_w4a16", "eager")]), "emulated"),
        (Events(backends=[("gemv_awq_w4a16", "cuda")]), "native"),
        (Events(torch_kernels=["torch.nn.functional.scaled_mm"]), "native"),
        (Events(backends=[("quantize_nvfp4", "cuda")]), "emulated"),
        (Events(), "emulated"),
    ],
)
def test_observed_mode(events: Any, mode: str) -> None:
    assert gpu_check.observed_mode(events) == mode


def test_depends_is_the_awq_batch_limit() -> None:
    assert gpu_check.expected_mode("depends", 4) == "native"
    assert gpu_check.expected_mode("depends", 256) == "native"
    assert gpu_check.expected_mode("depends", 257) == "emulated"
    assert gpu_check.expected_mode("emulated", 4) == "emulated"


def test_compare_names_each_difference() -> None:
    entry = {
        "execution": {
            "a": {"mode": "native", "reason": "r1"},
            "b": {"mode": "emulated", "reason": "gate"},
            "c": {"mode": "depends", "reason": "awq"},
        }
    }
    observed = {"a": "native", "b": "native", "c": "native", "d": "native"}
    assert gpu_check.compare(observed, entry, 4) == [
        "b: ran native; quantcheck says emulated (gate)",
        "d: ran native; quantcheck has no entry",
    ]
    assert gpu_check.compare({"c": "native"}, entry, 512) == [
        "c: ran native; quantcheck says depends (awq)"
    ]


def test_watching_records_and_restores_the_dispatch_points() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("comfy_kitchen")
    from comfy_kitchen.registry import registry
    from comfy_kitchen.tensor.base import QuantizedTensor

    w = torch.randn(32, 64, dtype=torch.bfloat16)
    qt = QuantizedTensor.from_float(w, "TensorWiseINT8Layout")
    real = (QuantizedTensor.dequantize, registry.get_capable_backend, torch._int_mm)
    events = Events()
    with gpu_check.watching(torch, events, (32, 64)):
        torch.nn.functional.linear(torch.randn(4, 64, dtype=torch.bfloat16), qt)
        qt.dequantize()
    assert events.dequantized
    assert ("int8_linear", "eager") in events.backends
    assert (QuantizedTensor.dequantize, registry.get_capable_backend, torch._int_mm) == real
    other = Events()
    with gpu_check.watching(torch, other, (32, 64)):
        torch.nn.functional.linear(torch.randn(4, 64, dtype=torch.bfloat16), qt)
    assert not other.dequantized  # the quantized forward does not dequantize the weight
