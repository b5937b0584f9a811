"""InvokeAI's device behaviour, from its own code run on the CPU (issue 24): InvokeAI 6.14.2
has no device code on this path; `_dequantize_comfyui_fp8` and `_strip_quantization_metadata`
run on the file as its loaders call them, and what they leave (dtype, no scales, the bytes) is
what the entry of `check --target invokeai --gpu G` must say on every device.
"""

from __future__ import annotations

import types

import torch
from safetensors.torch import load_file


def invokeai_held(mod: types.ModuleType, path: str) -> tuple[int, set[str]]:
    """(bytes of every tensor InvokeAI keeps, each counted in BF16 as its model load casts
    floats; the dtypes the quantized layers' weights have after its dequantization)."""
    sd = load_file(path)
    quantized = [k[: -len(".comfy_quant")] for k in sd if k.endswith(".comfy_quant")]
    mod._dequantize_comfyui_fp8(sd, torch.bfloat16)
    mod._strip_quantization_metadata(sd)
    dtypes = {str(sd[f"{p}.weight"].dtype) for p in quantized if f"{p}.weight" in sd}
    held = sum(t.numel() * (2 if t.is_floating_point() else t.element_size()) for t in sd.values())
    return held, dtypes
