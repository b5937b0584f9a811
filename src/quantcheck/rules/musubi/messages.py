"""musubi-tuner's messages (`quantcheck explain`): the exact errors its ConvRot INT8 artifact
inspection raises (kohya-ss/musubi-tuner 725869d, convrot_int8_utils.py), each mapped to the
rule that finds the cause before loading."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, Refine, pattern
from quantcheck.rules import codes as R
from quantcheck.rules.rule import Rule

RUNTIME = "musubi-tuner 725869d"
TARGET = "musubi"
#: Every message starts so ("Invalid ConvRot INT8 artifact {path}, layer {m}: ...").
HEAD = "Invalid ConvRot INT8 artifact {path}, layer {prefix}: "


def _p(tail: str, rule: Rule, *causes: str, refine: Refine | None = None) -> MessagePattern:
    return pattern(HEAD + tail, rule, *causes, runtime=RUNTIME, target=TARGET, refine=refine)


def _marker_dtype(v: dict[str, str]) -> str:
    """A marker dtype numpy cannot read is QC204, another one QC205."""
    from quantcheck.model.markers import UNREADABLE_MARKER_DTYPES

    return (R.QC204 if v.get("dtype", "") in UNREADABLE_MARKER_DTYPES else R.QC205).code


def _marker_text(v: dict[str, str]) -> str | tuple[str, ...]:
    """json.loads' complaint: a BOM is QC207; bytes UTF-8 cannot decode are invalid JSON or
    UTF-16/32 text (QC201, QC207); anything else QC201."""
    error = v.get("error", "")
    if "BOM" in error:
        return R.QC207.code
    if "can't decode" in error:
        return (R.QC201.code, R.QC207.code)
    return R.QC201.code


PATTERNS: list[MessagePattern] = [
    _p(
        "missing sibling tensors: {missing}",
        R.QC750,
        "the markers are only in the header's _quantization_metadata (musubi reads tensors)",
        "the file uses a format without weight_scale (W4A8, W6A8) or lost a companion",
    ),
    _p(
        "unsupported .comfy_quant format",
        R.QC751,
        "the file is FP8, NVFP4, MXFP8, W4A4, W4A8 or AWQ: musubi loads only ConvRot INT8",
    ),
    _p(
        ".comfy_quant convrot must be true",
        R.QC752,
        "plain int8_tensorwise without ConvRot, or convrot set only inside params",
    ),
    _p(
        "convrot_groupsize must be an exact power of four and at least 4",
        R.QC753,
        "the marker has no top-level convrot_groupsize (ComfyUI defaults to 256, musubi does not)",
        "the group is a float, a string or not a power of four",
    ),
    _p(
        "convrot_groupsize {group} does not divide input width {K}",
        R.QC753,
        "the marker's group does not match the weights' rotation",
    ),
    _p(
        "weight must be INT8/I8, got {weight_dtype}",
        R.QC754,
        "an FP8 or NVFP4 file with weight_scale (musubi loads only ConvRot INT8)",
        "a layer fell back to 16-bit during export but kept its scale and marker",
    ),
    _p(
        "weight must be two-dimensional, got {weight_shape}",
        R.QC754,
        "a non-Linear (convolution) weight was quantized",
    ),
    _p(
        "scale must be FP32/F32, got {scale_dtype}",
        R.QC755,
        "a conversion script re-saved every tensor in half precision, scales included",
    ),
    _p(
        "scale shape must be {expected}, got {scale_shape}",
        R.QC755,
        "the exporter wrote a scalar or [N] scale (valid for ComfyUI, not for musubi)",
    ),
    _p(
        ".comfy_quant must be U8, got {dtype}",
        R.QC205,
        "the marker was saved as I8 or another dtype instead of U8",
        refine=_marker_dtype,
    ),
    _p(
        ".comfy_quant must be one-dimensional",
        R.QC756,
        "the marker was saved as a 2-D tensor",
    ),
    _p(
        ".comfy_quant is not valid UTF-8 JSON ({error})",
        R.QC201,
        "the marker bytes are zeroed, truncated, UTF-16 or start with a BOM",
        refine=_marker_text,
    ),
    _p(
        ".comfy_quant JSON must be an object",
        R.QC202,
        "the marker holds a JSON string or list instead of an object",
    ),
    pattern(
        "Duplicate normalized safetensors key {key}: {first} and {second}",
        R.QC757,
        "a module has both weight_scale and scale_weight",
        "the same tensor is in two shards (QC501)",
        runtime=RUNTIME,
        target=TARGET,
    ),
]
