"""Phase D of sglang 0.5.23's inspector: per-marker tensor checks and derived `_` keys.

Each check uses the same Python operations as sglang (`int()`, `//`, tuple comparison,
f-strings), so values that make Python itself raise raise the same way here.
"""

from __future__ import annotations

from typing import Any

Meta = tuple[str, tuple[int, ...]]
CheckpointMeta = dict[str, Meta]

_REQUIRED = {
    "float8_e4m3fn": ("weight", "weight_scale"),
    "int8_tensorwise": ("weight", "weight_scale"),
    "convrot_w4a4": ("weight", "weight_scale"),
    "asym_w4a8_int8": ("weight", "weight_s_rel", "weight_s_channel"),
    "nvfp4": ("weight", "weight_scale", "weight_scale_2"),
}
VALIDATED_FORMATS = tuple(_REQUIRED)


def _fp8(prefix: str, marker: dict[str, Any], meta: CheckpointMeta) -> None:
    scheme = "static" if f"{prefix}.input_scale" in meta else "dynamic"
    marker["_activation_scheme"] = scheme


def _w4a8(prefix: str, marker: dict[str, Any], meta: CheckpointMeta) -> None:
    weight_dtype, weight_shape = meta[f"{prefix}.weight"]
    rel_dtype, rel_shape = meta[f"{prefix}.weight_s_rel"]
    channel_dtype, channel_shape = meta[f"{prefix}.weight_s_channel"]
    group_size = int(marker.get("group_size", 16))
    layer = f"Comfy W4A8 layer {prefix!r}"
    if group_size < 4:
        raise ValueError(f"{layer} has invalid group_size={group_size}")
    if weight_dtype != "I8" or rel_dtype != "F8_E4M3":
        raise ValueError(
            f"{layer} needs I8 weights and FP8 group scales, got {weight_dtype} and {rel_dtype}"
        )
    if channel_dtype != "F32":
        raise ValueError(f"{layer} needs F32 channel scales, got {channel_dtype}")
    if len(weight_shape) != 2:
        raise ValueError(f"{layer} needs a 2D packed weight, got {weight_shape}")
    rows, in_features = weight_shape[0], weight_shape[1] * 2
    if rel_shape != (rows, in_features // group_size) or channel_shape != (rows,):
        raise ValueError(
            f"{layer} has incompatible weight/scale shapes: "
            f"{weight_shape}, {rel_shape}, and {channel_shape}"
        )
    codebook, correction = f"{prefix}.weight_codebook", f"{prefix}.weight_correction"
    marker["_has_codebook"] = codebook in meta
    marker["_has_correction"] = correction in meta
    if codebook in meta and meta[codebook] != ("F32", (16,)):
        raise ValueError(f"{layer} needs an F32[16] codebook")
    if correction in meta and meta[correction] != ("F32", (in_features // group_size, rows)):
        raise ValueError(f"{layer} has an incompatible correction tensor")


def _w4a4(prefix: str, marker: dict[str, Any], meta: CheckpointMeta) -> None:
    weight_dtype, weight_shape = meta[f"{prefix}.weight"]
    scale_dtype, scale_shape = meta[f"{prefix}.weight_scale"]
    layer = f"Comfy W4A4 layer {prefix!r}"
    if weight_dtype != "I8" or scale_dtype != "F32":
        raise ValueError(
            f"{layer} needs I8 packed weights and F32 scales, got {weight_dtype} and {scale_dtype}"
        )
    if len(weight_shape) != 2 or scale_shape != (weight_shape[0],):
        raise ValueError(
            f"{layer} has incompatible weight/scale shapes: {weight_shape} and {scale_shape}"
        )
    groupsize = int(marker.get("convrot_groupsize", 256))
    if groupsize not in (16, 64, 256):
        raise ValueError(f"{layer} has unsupported convrot_groupsize={groupsize}")
    in_features = weight_shape[1] * 2
    if in_features % 64 != 0 or in_features % groupsize != 0:
        raise ValueError(
            f"{layer} has input size {in_features}, incompatible with quant_group_size=64 "
            f"and convrot_groupsize={groupsize}"
        )


def _nvfp4(prefix: str, marker: dict[str, Any], meta: CheckpointMeta) -> None:
    weight_dtype, weight_shape = meta[f"{prefix}.weight"]
    scale_dtype, scale_shape = meta[f"{prefix}.weight_scale"]
    scale2_dtype, scale2_shape = meta[f"{prefix}.weight_scale_2"]
    layer = f"Comfy NVFP4 layer {prefix!r}"
    if weight_dtype != "U8" or scale_dtype != "F8_E4M3":
        raise ValueError(
            f"{layer} needs U8 packed weights and FP8 block scales, "
            f"got {weight_dtype} and {scale_dtype}"
        )
    if scale2_dtype != "F32" or scale2_shape not in ((), (1,)):
        raise ValueError(
            f"{layer} needs a scalar F32 weight_scale_2, got {scale2_dtype}{scale2_shape}"
        )
    if len(weight_shape) != 2:
        raise ValueError(f"{layer} needs a 2D packed weight, got {weight_shape}")
    in_features = weight_shape[1] * 2
    if in_features % 16 != 0 or scale_shape != (weight_shape[0], in_features // 16):
        raise ValueError(
            f"{layer} has incompatible weight/scale shapes: {weight_shape} and {scale_shape}"
        )
    pre_quant_scale = f"{prefix}.pre_quant_scale"
    marker["_has_pre_quant_scale"] = pre_quant_scale in meta
    if pre_quant_scale in meta:
        pqs_dtype, pqs_shape = meta[pre_quant_scale]
        if pqs_dtype not in ("BF16", "F16", "F32") or pqs_shape != (in_features,):
            raise ValueError(f"{layer} has an incompatible pre_quant_scale: {pqs_dtype}{pqs_shape}")


def _int8(prefix: str, marker: dict[str, Any], meta: CheckpointMeta) -> None:
    weight_dtype, weight_shape = meta[f"{prefix}.weight"]
    scale_dtype, scale_shape = meta[f"{prefix}.weight_scale"]
    if weight_dtype == "I8" and scale_dtype == "F32" and scale_shape == ():
        if len(weight_shape) != 2:
            raise ValueError(
                f"Comfy tensorwise INT8 layer {prefix!r} needs a 2D weight, got {weight_shape}"
            )
        marker["_is_tensorwise_scalar"] = True
        return
    layer = f"Comfy INT8 layer {prefix!r}"
    if weight_dtype != "I8" or scale_dtype != "F32":
        raise ValueError(
            f"{layer} needs I8 weights and F32 scales, got {weight_dtype} and {scale_dtype}"
        )
    if len(weight_shape) != 2 or scale_shape != (weight_shape[0], 1):
        raise ValueError(
            f"{layer} has incompatible weight/scale shapes: {weight_shape} and {scale_shape}"
        )
    marker["_is_rowwise"] = True


_CHECKS = {
    "float8_e4m3fn": _fp8,
    "int8_tensorwise": _int8,
    "convrot_w4a4": _w4a4,
    "asym_w4a8_int8": _w4a8,
    "nvfp4": _nvfp4,
}


def validate_markers(markers: dict[str, dict[str, Any]], meta: CheckpointMeta) -> None:
    """Check every marker of a validated format, in insertion order; set its derived keys."""
    for prefix, marker in markers.items():
        marker_format = marker.get("format")
        # Equality tests, never hashing: `format` may be any JSON value.
        name = next((known for known in VALIDATED_FORMATS if marker_format == known), None)
        if name is None:
            continue
        required = [f"{prefix}.{suffix}" for suffix in _REQUIRED[name]]
        missing = sorted(key for key in required if key not in meta)
        if missing:
            raise ValueError(f"Comfy layer {prefix!r} is missing checkpoint tensors: {missing}")
        _CHECKS[name](prefix, marker, meta)
