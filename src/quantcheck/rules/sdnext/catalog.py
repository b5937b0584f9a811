"""QC710-QC719: SD.Next's own rules (what its native transformer loader refuses or changes).

Every SD.Next refusal raises OverrideArchMismatch, which generic_transformer.py catches: it logs
a warning and loads the base model's transformer instead. Those rules are `degraded` with
severity error (the user gets images from another model, nothing raises)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects

SDN = "vladmandic/sdnext @d11a619"
NT = f"{SDN} pipelines/native_transformer.py"
FALLBACK = (
    f"{SDN} pipelines/generic_transformer.py ~L132 catches OverrideArchMismatch and loads the "
    "base repo transformer"
)
E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
DEG = effects(**{"sdnext": "degraded"})
_FALLS_BACK = (
    " SD.Next does not raise: it logs a warning and loads the base model's transformer "
    "instead, so the images come from a different model."
)

RULES = [
    Rule(
        "QC710",
        "format-unsupported-by-sdnext",
        E,
        "format SD.Next's native loader does not adopt",
        DEG,
        Safety.UNSAFE,
        "Every marked layer uses int8_tensorwise, float8_e4m3fn or nvfp4 (COMFY_QUANT_FORMATS).",
        "detect_comfy_quant refuses any other format for the whole file." + _FALLS_BACK,
        '{"format": "mxfp8"}',
        "Requantize to int8_tensorwise, float8_e4m3fn or nvfp4 for SD.Next.",
        f"{NT} detect_comfy_quant, COMFY_QUANT_FORMATS; {FALLBACK}.",
    ),
    Rule(
        "QC711",
        "format-mix-refused-by-sdnext",
        E,
        "SD.Next takes one format per file",
        DEG,
        None,
        "All marked layers of the file use the same format.",
        'detect_comfy_quant refuses a file that "mixes formats across layers" (e.g. FP8 '
        "beside INT8)." + _FALLS_BACK,
        "float8_e4m3fn layers beside int8_tensorwise layers",
        "Requantize the minority format so one format remains.",
        f"{NT} detect_comfy_quant; {FALLBACK}.",
    ),
    Rule(
        "QC712",
        "nvfp4-marker-refused-by-sdnext",
        E,
        "NVFP4 marker SD.Next refuses (convrot, group size)",
        DEG,
        Safety.DISPLAY,
        "NVFP4 markers have no truthy convrot, a group_size of 16 (or none), and when they "
        "name orig_shape, a K divisible by 16.",
        'detect_comfy_quant refuses nvfp4 with convrot ("which the format does not define") '
        "and a group_size other than 16; adopt_nvfp4_layer refuses in_features not divisible "
        "by 16. A group_size int() cannot read raises past the fallback (a load error)."
        + _FALLS_BACK,
        '{"format": "nvfp4", "convrot": true}',
        "Drop convrot / group_size from NVFP4 markers (NVFP4 is never rotated; its group is 16).",
        f"{NT} detect_comfy_quant, adopt_nvfp4_layer; {FALLBACK}.",
    ),
    Rule(
        "QC713",
        "convrot-group-refused-by-sdnext",
        E,
        "convrot group SD.Next cannot use",
        DEG,
        None,
        "A rotated layer's convrot_groupsize (256 when absent) is a power of 4 (a regular "
        "Hadamard size: 4, 16, 64, 256, ...) that divides K (in_features).",
        "detect_comfy_quant refuses a group that is not a power of 4, "
        "build_component_prequantized one that does not divide in_features; a value int() "
        "cannot read raises past the fallback (a load error)." + _FALLS_BACK,
        '{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 32}',
        "Requantize with a convrot group of 16, 64 or 256 that divides K.",
        f"{NT} detect_comfy_quant, build_component_prequantized; {FALLBACK}.",
    ),
    Rule(
        "QC714",
        "weight-dtype-refused-by-sdnext",
        E,
        "weight dtype SD.Next's format expects",
        DEG,
        Safety.SAFE,
        "Weights are stored as the format's storage dtype: I8 for int8_tensorwise, F8_E4M3 "
        "for float8_e4m3fn, U8 for nvfp4.",
        "build_component_prequantized compares each marked weight's dtype with the format's "
        '("expects torch.float8_e4m3fn weights but X has torch.uint8"): FP8 stored as U8, '
        "which ComfyUI and Forge Neo view as FP8, is refused." + _FALLS_BACK,
        "float8_e4m3fn marker on a U8 weight",
        "Relabel the weight bytes as the format's dtype (same bytes).",
        f"{NT} build_component_prequantized; {FALLBACK}.",
        follows=("QC304",),  # a weight left 16-bit under the marker: SD.Next's view of it
    ),
    Rule(
        "QC715",
        "nvfp4-scales-unpadded-for-sdnext",
        E,
        "NVFP4 block scales not in the padded layout SD.Next requires",
        DEG,
        None,
        "An NVFP4 layer of N rows and K inputs has roundup(N,128) * roundup(K/16,4) block "
        "scales (the padded swizzled layout comfy-kitchen writes).",
        "adopt_nvfp4_layer refuses any other count. sglang 0.5.23 wants exactly (N, K/16) "
        "instead: one file satisfies both only when N % 128 == 0 and K % 64 == 0." + _FALLS_BACK,
        "N=64, K=64: weight_scale [64, 4] (unpadded; SD.Next wants 128 * 4 = 512 values)",
        "Store the block scales padded to [roundup(N,128), roundup(K/16,4)] (comfy-kitchen's "
        "layout) for SD.Next.",
        f"{NT} adopt_nvfp4_layer, unswizzle_block_scales; {FALLBACK}.",
    ),
    Rule(
        "QC716",
        "header-replaces-marker-in-sdnext",
        W,
        "SD.Next reads the header entry instead of the layer's marker tensor",
        DEG,
        Safety.DISPLAY,
        "A layer with both a _quantization_metadata header entry and a comfy_quant tensor has "
        "every tensor-marker key in the header entry too.",
        "transcode_quant_metadata writes each header entry whose weight exists as the layer's "
        "marker tensor, replacing the tensor marker whole: keys only the tensor has are lost "
        "without a message (a lost convrot computes rotated weights as plain ones: wrong "
        "output, no error).",
        'header {"format": "int8_tensorwise"} + tensor {"format": "int8_tensorwise", '
        '"convrot": true, "convrot_groupsize": 16}',
        "Write the same complete marker in the header entry and the tensor, or drop the "
        "header entries.",
        f"{NT} transcode_quant_metadata.",
    ),
    Rule(
        "QC717",
        "marker-params-ignored-by-sdnext",
        E,
        "SD.Next ignores marker keys nested under params",
        DEG,
        Safety.SAFE,
        "convrot, convrot_groupsize, group_size and full_precision_matrix_mult are written at "
        "the marker's top level.",
        "SD.Next reads these keys from the top level only (ComfyUI and Forge Neo also look "
        "in params): a convrot under params loads rotated weights as plain ones (wrong "
        "output, no error); a group size under params falls back to the default.",
        '{"format": "int8_tensorwise", "params": {"convrot": true, "convrot_groupsize": 16}}',
        "Move the keys out of params to the marker's top level (same meaning).",
        f"{NT} detect_comfy_quant, build_component_prequantized (meta.get at the top level).",
    ),
]
