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

from quantcheck.formats.table import FLOATS, FORMATS, ROTATION_GROUPS, SCALAR, Dims, FormatSpec
from quantcheck.model.layers import Layer

FLOAT_SCALES = FLOATS
SCALAR_SHAPES = tuple(SCALAR(Dims(0, 0, ())))
#: Scale bytes some writers type as F8_E8M0; the same bytes as the table's U8 (a fix relabels).
E8M0_ALIAS = frozenset({"F8_E8M0"})


def _scale_only(dtype: str) -> FormatSpec | None:
    """The format storing `dtype` weights with one scalar weight_scale (the FP8 formats)."""
    return next(
        (
            f
            for f in FORMATS.values()
            if not f.third_party
            and dtype in f.weight_dtypes
            and (c := f.companion("weight_scale")) is not None
            and c.shapes is SCALAR
            and f.packing == "none"
            and not f.pad
        ),
        None,
    )


def _block_scaled(
    spec: FormatSpec, rows: int, k: int, scale: Any, alias: frozenset[str] = frozenset()
) -> bool:
    """Whether an unpadded [rows, k] layer of a padded format stores its block scale as the
    table says (dtype, or one of `alias`; swizzled shape)."""
    c = spec.companion("weight_scale")
    assert c is not None and c.shapes is not None
    return (
        rows % spec.pad == 0
        and k % spec.pad == 0
        and scale.dtype in (c.comfyui_dtypes or frozenset()) | alias
        and scale.shape in c.shapes(Dims(rows, k, ()))
    )


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
        return t is not None and t.dtype in FLOAT_SCALES and t.shape in SCALAR_SHAPES

    fp8 = _scale_only(w.dtype) if w.dtype.startswith("F8") else None
    if fp8 is not None and have <= {"weight_scale", "input_scale"}:
        if "weight_scale" not in have:
            return None, (
                "an FP8 weight without a scale is a plain cast; a marker would change "
                "how ComfyUI computes the layer"
            )
        if scalar("weight_scale") and ("input_scale" not in have or scalar("input_scale")):
            return {"format": fp8.name}, ""
    mx = FORMATS["mxfp8"]
    if (
        w.dtype in mx.weight_dtypes
        and have == {"weight_scale"}
        and _block_scaled(mx, rows, cols, ts["weight_scale"], E8M0_ALIAS)
    ):
        return {"format": mx.name}, ""
    int8 = FORMATS["int8_tensorwise"]
    if w.dtype in int8.weight_dtypes and have == {"weight_scale"} and scalar("weight_scale"):
        return {"format": int8.name}, ""
    if (
        w.dtype in int8.weight_dtypes
        and have == {"weight_scale"}
        and ts["weight_scale"].shape in ((rows, 1), (rows,))
    ):
        groups = ", ".join(map(str, ROTATION_GROUPS))
        return None, (
            f"I8 with a per-row scale is row-wise INT8, ConvRot INT8 (group {groups}) "
            "or W4A4; the tensors do not record which"
        )
    nv = FORMATS["nvfp4"]
    if (
        w.dtype in nv.weight_dtypes
        and have <= {"weight_scale", "weight_scale_2", "input_scale"}
        and {"weight_scale", "weight_scale_2"} <= have
        and _block_scaled(nv, rows, cols * 2, ts["weight_scale"])
        and scalar("weight_scale_2")
        and ("input_scale" not in have or scalar("input_scale"))
    ):
        return {"format": nv.name}, ""
    awq = FORMATS["awq_w4a16"]
    if w.dtype in awq.weight_dtypes and have == {c.suffix for c in awq.companions}:
        s, z = ts["weight_scale"], ts["weight_zeros"]
        c = awq.companion("weight_scale")
        k = cols * 2
        if (
            c is not None
            and s.dtype in (c.comfyui_dtypes or ())
            and z.dtype == s.dtype
            and s.shape == z.shape
            and len(s.shape) == 2
            and s.shape[1] == rows
            and s.shape[0] > 0
            and k % s.shape[0] == 0
        ):
            return {"format": awq.name, "group_size": k // s.shape[0]}, ""
    if w.dtype == "I8" and have >= {"weight_s_rel", "weight_s_channel"}:
        return None, (
            "W4A8 tensors do not record the rotation group (convrot_groupsize), and "
            "bit width and group size trade off"
        )
    return None, (
        f"{w.dtype} {list(w.shape)} with {', '.join(sorted(have)) or 'no companions'} "
        "matches no single format"
    )
