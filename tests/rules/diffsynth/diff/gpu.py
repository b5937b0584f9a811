"""DiffSynth-Studio's device behaviour, from its own code run on the CPU (issue 24): what
`check --target diffsynth --gpu G` is compared with.

DiffSynth-Studio 2.1.12 (its wheel's `core/quant/backends/comfy_kitchen.py`, unmodified): for a
device, comfy-kitchen's backends register under the device's facts (the ComfyUI GPU oracle's
`register_backends`: cuda, triton where `import triton` works, hip on AMD), then DiffSynth's own
`ComfyKitchenQuantBackend.validate_environment` runs under the same facts (its CUDA < 13
switch); each layer is rebuilt by its `unflatten_state_dict`, loaded into the shell its format
builds and run forward on the CPU, and each comfy-kitchen op it dispatched is put to the
registry in the device's state (the oracle's `pick`). The layer's mode comes from the same
`oracle_mode` as ComfyUI's.
"""

from __future__ import annotations

import types
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from ...comfyui.diff.gpu_compare import Verdict
from ...comfyui.diff.gpu_files import layers_of
from ...comfyui.diff.gpu_oracle import (
    MATMUL_OPS,
    LayerPath,
    _real_torch_is,
    _registry,
    _restore,
    _snapshot,
    forward_calls,
    pick,
    register_backends,
    torch_fp8,
)
from ...comfyui.diff.gpu_run import layer_mode
from ...comfyui.diff.gpu_stack import Stack


def diffsynth_state(mod: types.ModuleType, stack: Stack, *, triton: bool) -> dict[str, Any]:
    """comfy-kitchen's registry as DiffSynth leaves it on the device: the backends registered
    under its facts, then DiffSynth's own `validate_environment`."""
    cpu = _snapshot()
    try:
        with _real_torch_is(stack):
            _registry()._disabled = set()
            register_backends(stack, triton=triton)
            backend = mod.ComfyKitchenQuantBackend(types.SimpleNamespace(orig_dtype=torch.bfloat16))
            backend.validate_environment()
            _registry()._compute_capability  # noqa: B018 - computed under the patch
            return _snapshot()
    finally:
        _restore(cpu)


def diffsynth_verdicts(
    mod: types.ModuleType, path: str, stack: Stack, state: dict[str, Any]
) -> dict[str, tuple[str | None, Verdict]]:
    """The mode of every marked layer of `path` DiffSynth loads, on `stack` (`state`: the
    registry as `diffsynth_state` left it)."""
    sd = load_file(path)
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata() or {}
    backend = mod.ComfyKitchenQuantBackend(types.SimpleNamespace(orig_dtype=torch.bfloat16))
    rebuilt = backend.unflatten_state_dict(sd, metadata)
    fp8_device = torch_fp8(stack)
    out: dict[str, tuple[str | None, Verdict]] = {}
    for layer in layers_of(path):
        fmt = mod.FORMATS.get(layer.fmt)
        if fmt is None:
            continue  # a format DiffSynth refuses: its findings say so (QC730)
        mine = f"{layer.name}."
        tensors = {k[len(mine) :]: v for k, v in rebuilt.items() if k.startswith(mine)}
        bias = "bias" in tensors
        shell = fmt.linear_cls(
            layer.k, layer.n, bias, layout=fmt.layout_cls, compute_dtype=torch.bfloat16
        )
        if bias:
            tensors["bias"] = tensors["bias"].to(torch.bfloat16)
        shell.load_state_dict(tensors, assign=True)
        x = torch.randn(4, layer.k, generator=torch.Generator().manual_seed(0))
        quantized, seen, error = forward_calls(shell, x.to(torch.bfloat16), layer.n, layer.k)
        calls = [pick(op, kw, state, stack.device_type) for op, kw in seen if op in MATMUL_OPS]
        path_taken = LayerPath(quantized, False, calls, error)
        out[layer.name] = (layer.fmt, layer_mode(path_taken, layer, stack, fp8_device))
    return out
