"""DiffSynth-Studio 2.1.12's messages (comfy_kitchen.py, and torch's strict load) mapped to
rules."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, pattern
from quantcheck.rules import codes as R

RT = "DiffSynth-Studio 2.1.12"
_T = "diffsynth"
PATTERNS: list[MessagePattern] = [
    pattern(
        "`{prefix}.comfy_quant` is not valid JSON: {error}",
        R.QC201,
        "the marker bytes are not UTF-8 JSON (zeroed, truncated, or a UTF-8 BOM / UTF-16 text, "
        "which ComfyUI accepts but DiffSynth does not)",
        "the marker tensor is stored in a dtype other than U8/I8 (its values are cast)",
        runtime=RT,
        target=_T,
    ),
    pattern(
        "`{prefix}.comfy_quant` has no `format` field.",
        R.QC730,
        "the marker tensor has no format (the header may have it; DiffSynth does not read it)",
        runtime=RT,
        target=_T,
    ),
    pattern(
        "`{prefix}` uses format `{format}`, not in ['float8_e4m3fn', 'int8_tensorwise'].",
        R.QC730,
        "the layer is NVFP4, MXFP8, W4A8, W4A4, AWQ or FP8 E5M2: DiffSynth-Studio loads only "
        "float8_e4m3fn and int8_tensorwise",
        runtime=RT,
        target=_T,
    ),
    pattern(
        "`{prefix}` has a comfy_quant marker but no `{key}`.",
        R.QC731,
        "the layer's weight_scale (or weight) is missing, or lives in another shard not loaded",
        runtime=RT,
        target=_T,
    ),
    pattern(
        "The marker of `{prefix}` asks for convrot with groupsize {convrot_groupsize}, which "
        "does not divide in_features={K}.",
        R.QC732,
        "the marker has no convrot_groupsize and the default 256 does not divide K",
        "the marker names a group other than the one the weights were rotated with",
        runtime=RT,
        target=_T,
    ),
    pattern(
        "Unexpected key(s) in state_dict: {keys}",
        R.QC733,
        "the layers are quantized per the header _quantization_metadata only: DiffSynth reads "
        "marker tensors, so their weight_scale is left over",
        "a marked layer stores tensors its format does not use (QC734)",
        runtime=RT,
        target=_T,
    ),
]
