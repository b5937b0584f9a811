"""Infer a missing `comfy_quant` marker from a layer's tensors, only where that is unambiguous.

Standard library only. Unambiguous layouts (the table in docs/fixes.md):

- F8_E4M3 [N, K] + float scalar weight_scale ([] or [1]), optional scalar input_scale
  -> float8_e4m3fn
- F8_E5M2 [N, K] + float scalar weight_scale, optional scalar input_scale -> float8_e5m2
- I8 [N, K] + float scalar weight_scale -> int8_tensorwise (scalar scale: never ConvRot)
- U8 [N16, K16/2] + F8_E4M3/U8 weight_scale of the swizzled shape
  [ceil(N16,128), ceil(K16/16,4)] + float scalar weight_scale_2 -> nvfp4
- F8_E4M3 [N32, K32] + U8/F8_E8M0 weight_scale [ceil(N32,128), ceil(K32/32,4)] -> mxfp8
- I8 [N, K/2] + BF16/F16 weight_scale and weight_zeros [K/G, N] -> awq_w4a16, group_size G

Ambiguous (never guessed): I8 [N, K] with an F32 [N, 1] or [N] scale (row-wise INT8 and ConvRot
INT8 with any of three rotation groups store the same tensors); W4A8 and W4A4 (the rotation
group is not recorded in the tensors; W4A8's bit width and group size trade off too); an FP8
weight without a scale (a plain cast: a marker would change how ComfyUI computes); any other
combination, or extra tensors the format does not store.
"""

from __future__ import annotations

from typing import Any

from quantcheck.formats.table import swizzled
from quantcheck.layers import Layer

FLOAT_SCALES = frozenset({"F32", "F16", "BF16", "F64"})
SCALAR = ((), (1,))


def infer_marker(layer: Layer) -> tuple[dict[str, Any] | None, str]:
    """(marker fields, "") when the tensors name one format; (None, why not) otherwise."""
    w = layer.weight
    if w is None or len(w.shape) != 2:
        return None, "the layer has no 2-D weight"
    ts = {s: t for s, t in layer.tensors.items() if s not in ("weight", "bias", "comfy_quant")}
    have = set(ts)
    rows, cols = w.shape

    def scalar(s: str) -> bool:
        t = ts.get(s)
        return t is not None and t.dtype in FLOAT_SCALES and t.shape in SCALAR

    if w.dtype in ("F8_E4M3", "F8_E5M2") and have <= {"weight_scale", "input_scale"}:
        if "weight_scale" not in have:
            return None, ("an FP8 weight without a scale is a plain cast; a marker would change "
                          "how ComfyUI computes the layer")
        if scalar("weight_scale") and ("input_scale" not in have or scalar("input_scale")):
            fmt = "float8_e4m3fn" if w.dtype == "F8_E4M3" else "float8_e5m2"
            return {"format": fmt}, ""
    if w.dtype == "F8_E4M3" and have == {"weight_scale"}:
        s = ts["weight_scale"]
        if (s.dtype in ("U8", "F8_E8M0") and rows % 32 == 0 and cols % 32 == 0
                and s.shape == swizzled(rows, cols // 32)):
            return {"format": "mxfp8"}, ""
    if w.dtype == "I8" and have == {"weight_scale"} and scalar("weight_scale"):
        return {"format": "int8_tensorwise"}, ""
    if w.dtype == "I8" and have == {"weight_scale"} and ts["weight_scale"].shape in (
            (rows, 1), (rows,)):
        return None, ("I8 with a per-row scale is row-wise INT8, ConvRot INT8 (group 16, 64 or "
                      "256) or W4A4; the tensors do not record which")
    if w.dtype == "U8" and have <= {"weight_scale", "weight_scale_2", "input_scale"} and \
            {"weight_scale", "weight_scale_2"} <= have:
        s = ts["weight_scale"]
        k = cols * 2
        if (rows % 16 == 0 and k % 16 == 0 and s.dtype in ("F8_E4M3", "U8")
                and s.shape == swizzled(rows, k // 16) and scalar("weight_scale_2")
                and ("input_scale" not in have or scalar("input_scale"))):
            return {"format": "nvfp4"}, ""
    if w.dtype == "I8" and have == {"weight_scale", "weight_zeros"}:
        s, z = ts["weight_scale"], ts["weight_zeros"]
        k = cols * 2
        if (s.dtype in ("BF16", "F16") and z.dtype == s.dtype and s.shape == z.shape
                and len(s.shape) == 2 and s.shape[1] == rows and s.shape[0] > 0
                and k % s.shape[0] == 0):
            return {"format": "awq_w4a16", "group_size": k // s.shape[0]}, ""
    if w.dtype == "I8" and have >= {"weight_s_rel", "weight_s_channel"}:
        return None, ("W4A8 tensors do not record the rotation group (convrot_groupsize), and "
                      "bit width and group size trade off")
    return None, (f"{w.dtype} {list(w.shape)} with {', '.join(sorted(have)) or 'no companions'} "
                  "matches no single format")
