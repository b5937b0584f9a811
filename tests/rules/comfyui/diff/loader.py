"""Import the pinned ComfyUI pieces with their heavy imports stubbed.

Executed unmodified: `comfy/quant_ops.py` whole (QUANT_ALGOS, the layout classes it registers
with comfy-kitchen) and, from `comfy/ops.py`, the top-level functions `_load_quantized_module`
(the per-format loading every quantized op uses, ~L1200-1290) and `get_disabled_quant_formats`
(the formats `pick_operations` runs emulated, dequantize + matmul, on a device, near the end of
the file). Each is compiled from its own source text in a namespace holding what it reads at
module level in ops.py: torch, json, logging, quant_ops' QUANT_ALGOS, QuantizedTensor and
get_layout_class, and `comfy.model_management` as a CPU device's capabilities (`CPU_COMPUTE`:
no fp8, NVFP4 or MXFP8 compute; INT8 compute, which comfy-kitchen's eager kernels provide on
CPU. [GUESS]: comfy/model_management.py at the pin was not read). The key plumbing before
the layers (comfy/sd.py load_diffusion_model_state_dict with comfy/utils.py and
comfy/model_detection.py, @783545f6) runs as `plumb` (see `_plumbing`). `comfy.cli_args`
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
    `disabled` (the formats ComfyUI emulates on the CPU: get_disabled_quant_formats),
    `plumb(sd, metadata) -> (sd, metadata)` (the key plumbing of load_diffusion_model_state_dict,
    up to where it first reads the model: see `_plumbing`)."""

    quant_ops: Any
    load: Any
    disabled: frozenset[str]
    plumb: Any


class _Plumbed(Exception):
    """Raised by the stubbed `comfy.utils.calculate_parameters`: the first call of
    load_diffusion_model_state_dict after its key plumbing, carrying the state dict."""

    def __init__(self, sd: dict[str, Any]) -> None:
        super().__init__("plumbed")
        self.sd = sd


def _stop(sd: dict[str, Any]) -> Any:
    raise _Plumbed(sd)


def _plumbing(root: Path, package: types.ModuleType) -> Any:
    """ComfyUI's own `load_diffusion_model_state_dict` (comfy/sd.py @783545f6), unmodified, run
    up to `comfy.utils.calculate_parameters(sd)`, its first line after the key plumbing
    (~L2284-2294): `convert_old_quants`, `unet_prefix_from_state_dict`,
    `state_dict_prefix_replace` and `convert_old_quants` again are ComfyUI's own functions;
    only `calculate_parameters` is a stub, which stops the load and hands back the state dict
    the model would be built from."""
    import torch

    utils_ns: dict[str, Any] = {"torch": torch, "json": json, "logging": logging}
    for name in ("convert_old_quants", "state_dict_prefix_replace"):
        exec(compile(function_source(root / "comfy/utils.py", name), "utils.py", "exec"), utils_ns)
    detect_ns: dict[str, Any] = {"logging": logging}
    path = root / "comfy/model_detection.py"
    exec(
        compile(function_source(path, "unet_prefix_from_state_dict"), str(path), "exec"), detect_ns
    )
    package.utils = _stub(
        "comfy.utils",
        convert_old_quants=utils_ns["convert_old_quants"],
        state_dict_prefix_replace=utils_ns["state_dict_prefix_replace"],
        calculate_parameters=_stop,
    )
    detection = _stub(
        "comfy.model_detection",
        unet_prefix_from_state_dict=detect_ns["unet_prefix_from_state_dict"],
    )
    sd_ns: dict[str, Any] = {
        "comfy": package,
        "model_detection": detection,
        "torch": torch,
        "logging": logging,
    }
    path = root / "comfy/sd.py"
    exec(
        compile(function_source(path, "load_diffusion_model_state_dict"), str(path), "exec"), sd_ns
    )
    load_dm = sd_ns["load_diffusion_model_state_dict"]

    def plumb(sd: dict[str, Any], metadata: dict[str, str] | None) -> dict[str, Any]:
        try:
            load_dm(dict(sd), metadata=metadata)
        except _Plumbed as stop:
            return stop.sd
        raise AssertionError("load_diffusion_model_state_dict did not reach calculate_parameters")

    return plumb


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
        plumb=_plumbing(root, package),
    )
