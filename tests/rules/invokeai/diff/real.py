"""What InvokeAI's own code makes of one generated checkpoint (`diff_cases.py`): one of
"raises" (its code or the load into the module refuses the file), "wrong" (it loads, but the
weight the module computes with is not the layer's weight), "leftovers" (loads right, but keys
its Wan loader refuses stay), "exact" (`diff_cases.close` judges the loaded weight).
"""

from __future__ import annotations

import types
from typing import Any

import torch
from safetensors.torch import load_file

from ...diff_cases import close


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
        if not close(linear.weight, want):
            wrong.append(prefix)
    if wrong:
        return "wrong", f"{', '.join(wrong)}: loaded weight is not the layer's weight"
    left = sorted(k for k in sd if not k.endswith((".weight", ".bias")))
    if left:
        return "leftovers", f"kept {left}"
    return "exact", f"{count} dequantized"
