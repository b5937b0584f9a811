"""Import the pinned ComfyUI pieces with their heavy imports stubbed.

Executed unmodified: `comfy/quant_ops.py` whole (QUANT_ALGOS, the layout classes it registers
with comfy-kitchen) and, from `comfy/ops.py`, the top-level functions `_load_quantized_module`
(the per-format loading every quantized op uses, ~L1200-1290) and `get_disabled_quant_formats`
(the formats `pick_operations` runs emulated, dequantize + matmul, on a device, near the end of
the file). Each is compiled from its own source text in a namespace holding what it reads at
module level in ops.py: torch, json, logging, quant_ops' QUANT_ALGOS, QuantizedTensor and
get_layout_class, and `comfy.model_management` as a CPU device's capabilities (`CPU_COMPUTE`:
no fp8, NVFP4 or MXFP8 compute; INT8 compute, which comfy-kitchen's eager kernels provide on
CPU. [GUESS]: comfy/model_management.py at the pin was not read). `comfy.cli_args`
(read by quant_ops for its Triton switch: off, the default) and `comfy.float` (stochastic
rounding, unused by loading) are stubs; nothing else of ComfyUI is imported. comfy-kitchen and
torch are the real packages (CPU: quant_ops disables the CUDA backend when torch has no CUDA).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import types
from pathlib import Path
from typing import Any

from .source import function_source

#: What the stubbed `comfy.model_management.supports_<kind>_compute(device)` answer (CPU).
CPU_COMPUTE = {"nvfp4": False, "mxfp8": False, "fp8": False, "int8": True}


class Comfy(types.SimpleNamespace):
    """What the tests call: `quant_ops` (the module), `load` (_load_quantized_module),
    `disabled` (the formats ComfyUI emulates on the CPU: get_disabled_quant_formats)."""

    quant_ops: Any
    load: Any
    disabled: frozenset[str]


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def _answer(on: bool) -> Any:
    return lambda device=None: on


def load(root: Path) -> Comfy:
    """The pinned pieces under `root` (a verified tree, see source.py)."""
    import torch

    for name in [n for n in sys.modules if n == "comfy" or n.startswith("comfy.")]:
        del sys.modules[name]
    package = _stub("comfy")
    package.__path__ = []
    args = types.SimpleNamespace(enable_triton_backend=False, disable_triton_backend=False)
    package.cli_args = _stub("comfy.cli_args", args=args)
    package.float = _stub("comfy.float")
    package.model_management = _stub(
        "comfy.model_management",
        **{f"supports_{kind}_compute": _answer(on) for kind, on in CPU_COMPUTE.items()},
    )
    spec = importlib.util.spec_from_file_location("comfy.quant_ops", root / "comfy/quant_ops.py")
    assert spec is not None and spec.loader is not None
    quant_ops = importlib.util.module_from_spec(spec)
    sys.modules["comfy.quant_ops"] = quant_ops
    spec.loader.exec_module(quant_ops)
    namespace: dict[str, Any] = {
        "torch": torch,
        "json": json,
        "logging": logging,
        "QUANT_ALGOS": quant_ops.QUANT_ALGOS,
        "QuantizedTensor": quant_ops.QuantizedTensor,
        "get_layout_class": quant_ops.get_layout_class,
        "comfy": package,
    }
    ops = root / "comfy/ops.py"
    for name in ("_load_quantized_module", "get_disabled_quant_formats"):
        exec(compile(function_source(ops, name), str(ops), "exec"), namespace)
    return Comfy(
        quant_ops=quant_ops,
        load=namespace["_load_quantized_module"],
        disabled=frozenset(namespace["get_disabled_quant_formats"](torch.device("cpu"))),
    )
