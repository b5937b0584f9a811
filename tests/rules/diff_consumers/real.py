"""What InvokeAI's and DiffSynth-Studio's own code make of one generated checkpoint.

Each outcome is one of: "raises" (their code or the load into the module refuses the file),
"wrong" (it loads, but the weight the module computes with is not the layer's weight),
"leftovers" (InvokeAI: loads right, but keys its Wan loader refuses stay), "exact".
The layer's weight is quantcheck's dequantization of the stored tensors (`reference`); a
loaded weight agrees when its relative error is under `TOLERANCE` (BF16 rounding and the
ConvRot rotation order stay far below it; rotated or misread weights are far above it).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

TOLERANCE = 0.02


def _close(got: torch.Tensor, want: np.ndarray | None) -> bool:
    if want is None:
        return False
    g = got.detach().to(torch.float32).numpy()
    if g.shape != want.shape:
        return False
    return float(np.linalg.norm(g - want) / max(np.linalg.norm(want), 1e-30)) < TOLERANCE


def invokeai_outcome(
    mod: types.ModuleType, path: str, layers: dict[str, tuple[tuple[int, int], Any]]
) -> tuple[str, str]:
    """(outcome, why): InvokeAI's dequantize + strip, then load_state_dict(strict=False,
    assign=True) of each layer into a Linear of its logical [N, K], as its loaders do."""
    sd = load_file(path)
    try:
        count = mod._dequantize_comfyui_fp8(sd, torch.bfloat16)
    except RuntimeError as exc:
        return "raises", f"_dequantize_comfyui_fp8: {exc}"
    mod._strip_quantization_metadata(sd)
    wrong = []
    for prefix, ((n, k), want) in layers.items():
        with torch.device("meta"):
            linear = torch.nn.Linear(k, n, bias=False)
        try:
            linear.load_state_dict({"weight": sd[f"{prefix}.weight"]}, strict=False, assign=True)
        except RuntimeError as exc:
            return "raises", f"load_state_dict: {str(exc).splitlines()[-1].strip()}"
        if not _close(linear.weight, want):
            wrong.append(prefix)
    if wrong:
        return "wrong", f"{', '.join(wrong)}: loaded weight is not the layer's weight"
    left = sorted(k for k in sd if not k.endswith((".weight", ".bias")))
    if left:
        return "leftovers", f"kept {left}"
    return "exact", f"{count} dequantized"


def diffsynth_outcome(
    mod: types.ModuleType, path: str, layers: dict[str, tuple[tuple[int, int], Any]]
) -> tuple[str, str]:
    """(outcome, why): DiffSynth's `unflatten_state_dict` on the file's tensors and header,
    then a strict load_state_dict(assign=True) of each layer into the comfy-kitchen shell
    its method builds (the marker's format; the INT8 method's shell for an unmarked layer)."""
    from comfy_kitchen.tensor import QuantizedTensor

    sd = load_file(path)
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata() or {}
    backend = mod.ComfyKitchenQuantBackend(types.SimpleNamespace(orig_dtype=torch.bfloat16))
    try:
        rebuilt = backend.unflatten_state_dict(sd, metadata)
    except (ValueError, AttributeError, TypeError, ZeroDivisionError) as exc:
        return "raises", f"unflatten_state_dict: {type(exc).__name__}: {exc}"
    wrong = []
    for prefix, ((n, k), want) in layers.items():
        weight = rebuilt.get(f"{prefix}.weight")
        fmt = next(
            (f for f in mod.FORMATS.values() if f.layout_cls == getattr(weight, "_layout_cls", "")),
            mod.FORMATS["int8_tensorwise"],
        )
        shell = fmt.linear_cls(k, n, False, layout=fmt.layout_cls, compute_dtype=torch.bfloat16)
        mine = f"{prefix}."
        state = {key[len(mine) :]: v for key, v in rebuilt.items() if key.startswith(mine)}
        try:
            shell.load_state_dict(state, assign=True)
        except RuntimeError as exc:
            return "raises", f"load_state_dict: {' '.join(str(exc).split())}"
        w = shell.weight
        got = w.dequantize() if isinstance(w, QuantizedTensor) else w
        if not _close(got, want):
            wrong.append(prefix)
    if wrong:
        return "wrong", f"{', '.join(wrong)}: the module's weight is not the layer's weight"
    return "exact", "loaded quantized"
