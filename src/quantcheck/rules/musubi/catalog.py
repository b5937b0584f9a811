"""QC75x: musubi-tuner's own rules (what it refuses or silently changes).

Read in kohya-ss/musubi-tuner at 725869d, `src/musubi_tuner/modules/convrot_int8_utils.py`
(`inspect_convrot_int8_artifact`, `_decode_convrot_control`, `_is_power_of_four`,
`canonicalize_convrot_int8_key`), cited by function without line numbers. musubi-tuner is
not on PyPI, so no wheel was diffed: every rule cites the function instead.
"""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects

E = Severity.ERROR
#: The file every rule cites (project @ commit).
CONVROT = "kohya-ss/musubi-tuner @725869d src/musubi_tuner/modules/convrot_int8_utils.py"
INSPECT = f"{CONVROT} inspect_convrot_int8_artifact"
DECODE = f"{CONVROT} _decode_convrot_control"


def _fails() -> dict:  # type: ignore[type-arg]
    return effects(musubi="fails")


RULES = [
    Rule(
        "QC750",
        "musubi-missing-siblings",
        E,
        "module musubi takes for ConvRot INT8 lacks weight, scale or .comfy_quant",
        _fails(),
        None,
        "Every module with an I8 weight, a weight_scale or a .comfy_quant tensor has all three "
        "of weight, weight_scale (or scale_weight) and a .comfy_quant tensor.",
        "musubi inspects every pre-quantized file as a ConvRot INT8 artifact and refuses any "
        "module that is not a complete triple. It never reads the header's "
        "_quantization_metadata, so a file marked only there fails; so do formats without a "
        "weight_scale (W4A8, W6A8) and FP8/NVFP4 layers without a tensor marker.",
        "an int8_tensorwise layer described only in __metadata__._quantization_metadata",
        "Write each layer's marker as a .comfy_quant tensor; musubi loads pre-quantized files "
        "only as ConvRot int8_tensorwise triples.",
        f"{INSPECT} (artifact modules from `.comfy_quant`, `.weight_scale` and I8 "
        '`.weight` keys; "missing sibling tensors").',
    ),
    Rule(
        "QC751",
        "musubi-format-unsupported",
        E,
        "format musubi does not load pre-quantized",
        _fails(),
        None,
        "Every .comfy_quant tensor names format int8_tensorwise.",
        "musubi loads pre-quantized DiT files only as ConvRot INT8; any other format "
        "(FP8, NVFP4, MXFP8, W4A4, W4A8, AWQ) is refused. Its NVFP4 reader (nvfp4_utils) serves "
        "frozen text encoders, not this path.",
        '{"format": "float8_e4m3fn"}',
        "Quantize the model for musubi with ConvRot INT8 (int8_tensorwise, convrot true), or "
        "give it the BF16 model and let it quantize at load.",
        f'{DECODE} ("unsupported .comfy_quant format"), called by '
        "inspect_convrot_int8_artifact after the tensor checks (an FP8 file stops earlier at "
        '"weight must be INT8/I8").',
    ),
    Rule(
        "QC752",
        "musubi-convrot-required",
        E,
        'int8_tensorwise marker without "convrot": true',
        _fails(),
        None,
        'Every int8_tensorwise .comfy_quant has "convrot": true at its top level.',
        "musubi implements INT8 only with the ConvRot rotation; plain int8_tensorwise, a "
        "convrot of 1, or convrot only inside params are refused.",
        '{"format": "int8_tensorwise"}',
        "Requantize with ConvRot (the rotation changes the weights: setting the flag alone is "
        "wrong).",
        f'{DECODE} (`values.get("convrot") is not True`, ".comfy_quant convrot must be true").',
    ),
    Rule(
        "QC753",
        "musubi-convrot-group",
        E,
        "convrot_groupsize musubi refuses",
        _fails(),
        None,
        "convrot_groupsize is at the marker's top level, an integer power of four of at least "
        "4, and divides K.",
        "musubi reads the group from the top level only, with no default (ComfyUI defaults to "
        "256), refuses booleans and floats, and refuses a group that does not divide the input "
        "width.",
        '{"format": "int8_tensorwise", "convrot": true} (no convrot_groupsize)',
        "Write the group the weights were rotated with as a top-level integer convrot_groupsize.",
        f'{CONVROT} _is_power_of_four and _decode_convrot_control ("convrot_groupsize '
        'must be an exact power of four and at least 4"); inspect_convrot_int8_artifact '
        '("does not divide input width").',
        follows=("QC752",),  # no ConvRot at all: no group either
    ),
    Rule(
        "QC754",
        "musubi-weight-layout",
        E,
        "artifact weight not a 2-D I8 tensor",
        _fails(),
        None,
        "The weight of every module musubi takes for ConvRot INT8 is I8 and 2-D.",
        "musubi stops at the first weight of another dtype (an FP8 file with weight_scale "
        "fails here) or rank.",
        "float8_e4m3fn layer: F8_E4M3 weight with an F32 weight_scale",
        "Requantize as ConvRot INT8, or give musubi the BF16 model.",
        f'{INSPECT} ("weight must be INT8/I8", "weight must be two-dimensional").',
        follows=("QC751",),  # another format's own weight layout
    ),
    Rule(
        "QC755",
        "musubi-scale-layout",
        E,
        "artifact scale not an F32 [N, 1] tensor",
        _fails(),
        None,
        "The scale of every ConvRot INT8 module is F32 with shape exactly [N, 1].",
        "musubi refuses a scalar or [N] scale (both valid for ComfyUI) and any other dtype.",
        "int8_tensorwise ConvRot layer with an F32 [N] weight_scale",
        "Reshape the scale to [N, 1] (same values: lossless) or repeat a scalar into it; "
        "convert another float dtype to F32.",
        f'{INSPECT} ("scale must be FP32/F32", "scale shape must be (N, 1)").',
        follows=("QC751",),  # another format's own scale layout
    ),
    Rule(
        "QC756",
        "musubi-marker-not-1d",
        E,
        ".comfy_quant tensor not one-dimensional",
        _fails(),
        None,
        "Every .comfy_quant tensor is 1-D (U8 is checked by QC204/QC205).",
        "musubi refuses a marker of any other rank while it scans the file.",
        "blocks.0.attn.qkv.comfy_quant U8 [1, 71]",
        "Rewrite the marker as a 1-D U8 tensor (same bytes).",
        f'{INSPECT} (".comfy_quant must be one-dimensional").',
    ),
    Rule(
        "QC757",
        "musubi-duplicate-scale",
        E,
        "both weight_scale and scale_weight for one module",
        _fails(),
        None,
        "A module has at most one of weight_scale and scale_weight.",
        "musubi renames .weight_scale to .scale_weight before anything else and refuses the "
        "file when the two names meet.",
        "blocks.0.attn.qkv.weight_scale beside blocks.0.attn.qkv.scale_weight",
        "Keep one of the two scale tensors.",
        f"{CONVROT} canonicalize_convrot_int8_key and inspect_convrot_int8_artifact ("
        '"Duplicate normalized safetensors key").',
    ),
]
