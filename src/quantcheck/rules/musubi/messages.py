"""musubi-tuner's messages (`quantcheck explain`): the exact errors its pre-quantized gates
raise, each mapped to the rule that finds the cause before loading: 725869d's ConvRot INT8
artifact inspection (convrot_int8_utils.py `inspect_convrot_int8_artifact`), then 0.3.6's
loaders (convrot_int8_utils.py `parse_comfy_quant_spec` and
`ConvRotInt8Quantizer.load_and_quantize`, comfy_quant_utils.py `decode_comfy_quant_spec`,
nvfp4_utils.py `NvFp4Quantizer`, minimax_h3/text_encoder.py `load_h3_text_encoder`)."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, Refine, pattern
from quantcheck.rules import codes as R
from quantcheck.rules.rule import Rule

RUNTIME = "musubi-tuner 725869d"
NEWEST = "musubi-tuner 0.3.6"
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
    if "line 1 column 1 (char 0)" in error:  # nothing JSON at all: empty or NUL bytes
        return (R.QC201.code, R.QC203.code)
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
        'convrot written as 1 or "true" (0.3.6 takes those)',
        refine=lambda v: (R.QC752.code, R.QC758.code),
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
        refine=lambda v: (R.QC755.code, R.QC759.code),  # the scale under either name
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


def _n(template: str, rule: Rule, *causes: str, refine: Refine | None = None) -> MessagePattern:
    return pattern(template, rule, *causes, runtime=NEWEST, target=TARGET, refine=refine)


def _new_marker_dtype(v: dict[str, str]) -> str:
    """decode_comfy_quant_spec's one message for a marker of another rank or dtype."""
    if v.get("ndim") != "1":
        return R.QC756.code
    dtype = v.get("dtype", "").removeprefix("torch.")
    torch_to_st = {"int8": "I8", "bfloat16": "BF16", "float16": "F16", "float32": "F32"}
    return _marker_dtype({"dtype": torch_to_st.get(dtype, dtype.upper())})


def _format_or_convrot(v: dict[str, str]) -> str:
    """parse_comfy_quant_spec's one message for another format and for a missing convrot."""
    return (R.QC752 if "'int8_tensorwise'" in v.get("spec", "") else R.QC751).code


def _byte_weight(v: dict[str, str]) -> str | tuple[str, ...]:
    """An unmarked INT8 weight is an incomplete triple (QC750); another one-byte one is QC760,
    or QC750 when the module also has a weight_scale (musubi reads the weight first)."""
    if v.get("dtype") == "torch.int8":
        return R.QC750.code
    return (R.QC760.code, R.QC750.code)


#: 0.3.6's messages (the newest release): ConvRot INT8 loader, then the text encoder's.
PATTERNS += [
    _n(
        "Invalid comfy_quant tensor for {key}: expected 1D uint8, got {dtype} ndim={ndim}",
        R.QC756,
        "the marker was saved as a 2-D tensor, as I8 or in another dtype",
        refine=_new_marker_dtype,
    ),
    _n(
        "Invalid comfy_quant JSON for {key}: {error}",
        R.QC201,
        "the marker bytes are zeroed, truncated, UTF-16 or start with a BOM",
        refine=_marker_text,
    ),
    _n(
        "Invalid comfy_quant spec for {key}: expected a JSON object, got {kind}",
        R.QC202,
        "the marker holds a JSON string or list instead of an object",
    ),
    _n(
        "Unsupported comfy_quant format for {key}: {spec}. Only ConvRot INT8",
        R.QC751,
        "the file is FP8, NVFP4, MXFP8, W4A4, W4A8 or AWQ: musubi loads only ConvRot INT8",
        "plain int8_tensorwise without a top-level convrot",
        refine=_format_or_convrot,
    ),
    _n(
        "Invalid convrot_groupsize for {key}: {group} (must be a power of 4",
        R.QC753,
        "the marker has no top-level convrot_groupsize (ComfyUI defaults to 256, musubi does not)",
        "the group is a float, a string or not a power of four",
    ),
    _n(
        "Pre-quantized ConvRot layer {key}: in_features {K} not divisible by group size {group}",
        R.QC753,
        "the marker's group does not match the weights' rotation",
    ),
    _n(
        "Found {key} without a matching {spec_key} spec",
        R.QC750,
        "the markers are only in the header's _quantization_metadata (musubi reads tensors)",
        "a weight_scale (or an NVFP4 weight_scale_2 / pre_quant_scale) lost its .comfy_quant",
    ),
    _n(
        "Layer {key} is already in {dtype} format but has no .comfy_quant spec",
        R.QC760,
        "legacy scaled_fp8 or another unmarked quantized weight",
        "the markers are only in the header's _quantization_metadata",
        refine=_byte_weight,
    ),
    _n(
        "view() received an invalid combination of arguments - got (NoneType)",
        R.QC761,
        "a tensor is U16/U32/U64, F8_E8M0 or sub-byte: musubi's reader has no torch dtype for it",
    ),
    _n(
        "Pre-quantized ConvRot scale {key} must be F32, got {scale_dtype}",
        R.QC755,
        "a conversion script re-saved every tensor in half precision, scales included",
    ),
    _n(
        "Pre-quantized ConvRot layer {key} must be int8, got {weight_dtype}",
        R.QC754,
        "an FP8 layer with weight_scale carries an int8_tensorwise marker",
    ),
    _n(
        "Pre-quantized ConvRot layer {prefix} is missing tensors {missing}",
        R.QC750,
        "the file uses a format without weight_scale (W4A8, W6A8) or lost a companion",
    ),
    _n(
        "Pre-quantized ConvRot layer {prefix}: scale shape must be {expected}, got {scale_shape}",
        R.QC755,
        "the exporter wrote a scalar or [N] scale (valid for ComfyUI, not for musubi)",
    ),
    _n(
        "ConvRot INT8 state dict declares missing module {prefix} (total {n} unmatched)",
        R.QC765,
        "an embedding (or another non-Linear module) was quantized ConvRot INT8",
    ),
    _n(
        "Unsupported ComfyUI quantization format combination in text encoder checkpoint: "
        "{formats}.",
        R.QC762,
        "a mixed text encoder (NVFP4 with ConvRot INT8, or plain INT8 Linears)",
    ),
    *(
        _n(text, R.QC764, "the NVFP4 layer is not in comfy-kitchen's stored layout")
        for text in (
            "NVFP4 block scale {key} must be F8_E4M3, got {dtype}",
            "NVFP4 per-tensor scale {key} must be a F32 scalar, got {found}",
            "AWQ pre_quant_scale {key} must be a 1D float tensor, got {found}",
            "NVFP4 weight {key} must be 2D uint8 (packed), got {found}",
            "NVFP4 weight {key}: in_features {K} not a multiple of {block}",
            "INT8 per-row scale {key} must be F32, got {dtype}",
            "Unexpected tensor {key} for int8_tensorwise module {prefix}",
            "INT8 weight {key} must be int8, got {dtype}",
            "Pre-quantized module {prefix} is missing tensors {missing}",
            "NVFP4 module {prefix}: block scale has {n} elements, expected {want} for weight",
            "NVFP4 module {prefix}: pre_quant_scale has {n} elements, expected in_features {K}",
            "INT8 module {prefix}: scale shape must be {expected}, got {found}",
        )
    ),
    _n(
        "NVFP4 state dict declares {prefix}, which is not an nn.Linear in the model",
        R.QC765,
        "an embedding was quantized NVFP4",
    ),
    _n(
        "int8_tensorwise module {prefix} is not an nn.Embedding",
        R.QC765,
        "a Linear was quantized int8_tensorwise in an NVFP4 text encoder",
    ),
    *(
        _n(text, R.QC766, "the quantized file lost the released file's __metadata__ or tensors")
        for text in (
            "Unsupported quantized MiniMax-H3 checkpoint.",
            "MiniMax-H3 transformer checkpoint is missing config metadata",
            "MiniMax-H3 transformer checkpoint has invalid config metadata",
            "MiniMax-H3 transformer config must be an object",
            "MiniMax-H3 transformer config is missing {field}",
            "MiniMax-H3 transformer config {field} expected {expected}, got {found}",
            "Pruned MiniMax-H3 AdaLN must be classified from its tensor structure",
            "MiniMax-H3 checkpoint has mixed adaln_t_table and time_embedder structures",
            "Pruned MiniMax-H3 adaln_t_table must be {dtype}, got {found}",
            "Pruned MiniMax-H3 adaln_t_table must have shape [1025, 8], got {found}",
            "Pruned MiniMax-H3 checkpoint is missing {key}",
            "Pruned MiniMax-H3 {key} expected shape {expected}, got {found}",
        )
    ),
    _n(
        "Duplicate MiniMax-H3 tensor header {key}",
        R.QC766,
        "a module has both weight_scale and scale_weight (QC757)",
        refine=lambda v: (R.QC766.code, R.QC757.code),
    ),
]
