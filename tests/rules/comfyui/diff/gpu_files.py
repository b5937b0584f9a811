"""The checkpoints the GPU oracle judges, read into ComfyUI's per-layer pieces.

`layers_of(path)` gives every layer with a `comfy_quant` marker tensor: its stored name, its
tensors by suffix (as `_load_quantized_module` pops them), its logical (N, K) and its format.
Packed formats store K/2 bytes a row: the logical K is twice the stored one (the layout's
`orig_shape`, which ComfyUI's Linear takes from the model, not the file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from safetensors.torch import load_file

#: Formats whose weight stores two 4-bit codes a byte.
PACKED = frozenset({"nvfp4", "asym_w4a8_int8", "convrot_w4a4", "awq_w4a16"})


@dataclass
class Layer:
    name: str
    tensors: dict[str, Any]
    n: int
    k: int
    fmt: str | None


def layers_of(path: str) -> list[Layer]:
    sd = load_file(path)
    found = []
    for key in sorted(sd):
        if not key.endswith(".comfy_quant"):
            continue
        name = key[: -len(".comfy_quant")]
        tensors = {
            k[len(name) + 1 :]: v
            for k, v in sd.items()
            if k.startswith(name + ".") and "." not in k[len(name) + 1 :]
        }
        weight = tensors.get("weight")
        if weight is None or weight.dim() != 2:
            continue
        try:
            fmt = json.loads(tensors["comfy_quant"].numpy().tobytes()).get("format")
        except (ValueError, AttributeError):
            fmt = None
        n, k = weight.shape
        k = k * 2 if fmt in PACKED else k
        found.append(Layer(name, tensors, int(n), int(k), fmt))
    return found
