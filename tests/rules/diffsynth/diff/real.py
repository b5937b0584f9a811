"""What DiffSynth-Studio's own code makes of one generated checkpoint (`diff_cases.py`): one
of "raises" (its code or the load into the module refuses the file), "wrong" (it loads, but
the weight the module computes with is not the layer's weight), "exact" (`diff_cases.close`
judges the loaded weight).
"""

from __future__ import annotations

import types
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from ...diff_cases import close


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
        if not close(got, want):
            wrong.append(prefix)
    if wrong:
        return "wrong", f"{', '.join(wrong)}: the module's weight is not the layer's weight"
    return "exact", "loaded quantized"
