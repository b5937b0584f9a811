"""QC75x-QC76x: musubi-tuner's own rules (what it refuses or silently changes).

Two releases are modelled (runtimes/musubi.py says what each is); every rule says what each
does, and the release data (`RELEASES`) gives the effect per release. Read in
kohya-ss/musubi-tuner at 725869d, `src/musubi_tuner/modules/convrot_int8_utils.py`
(`inspect_convrot_int8_artifact`, `_decode_convrot_control`, `_is_power_of_four`,
`canonicalize_convrot_int8_key`), and at 0.3.6 (`modules/convrot_int8_utils.py`
`parse_comfy_quant_spec`, `ConvRotInt8Quantizer.load_and_quantize`,
`apply_convrot_int8_monkey_patch`; `modules/comfy_quant_utils.py`; `modules/nvfp4_utils.py`
`NvFp4Quantizer`, `apply_nvfp4_monkey_patch`; `minimax_h3/text_encoder.py`
`load_h3_text_encoder`; `utils/safetensors_utils.py` `MemoryEfficientSafeOpen`), cited by
function without line numbers. musubi-tuner is not on PyPI: tests/rules/musubi/diff runs these
functions from a pinned folder outside the repository.
"""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects

E = Severity.ERROR
#: The files the rules cite (project @ commit or release).
CONVROT = "kohya-ss/musubi-tuner @725869d src/musubi_tuner/modules/convrot_int8_utils.py"
INSPECT = f"{CONVROT} inspect_convrot_int8_artifact"
DECODE = f"{CONVROT} _decode_convrot_control"
NEW = "kohya-ss/musubi-tuner 0.3.6 src/musubi_tuner"
LOAD = f"{NEW}/modules/convrot_int8_utils.py ConvRotInt8Quantizer.load_and_quantize"
PARSE = f"{NEW}/modules/convrot_int8_utils.py parse_comfy_quant_spec"
NVFP4 = f"{NEW}/modules/nvfp4_utils.py NvFp4Quantizer"
TE = f"{NEW}/minimax_h3/text_encoder.py load_h3_text_encoder"
H3 = f"{NEW}/minimax_h3/model.py"


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
        "musubi takes every pre-quantized module as a ConvRot INT8 triple and refuses one that "
        "is incomplete. It never reads the header's _quantization_metadata, so a file marked "
        "only there fails; so do formats without a weight_scale (W4A8, W6A8) and FP8/NVFP4 "
        "layers without a tensor marker. Both releases refuse the same modules, with "
        "different messages.",
        "an int8_tensorwise layer described only in __metadata__._quantization_metadata",
        "Write each layer's marker as a .comfy_quant tensor; musubi loads pre-quantized files "
        "only as ConvRot int8_tensorwise triples.",
        f"{INSPECT} (artifact modules from `.comfy_quant`, `.weight_scale` and I8 "
        f'`.weight` keys; "missing sibling tensors"); {LOAD} ("Found ... without a matching '
        '... spec", "is already in torch.int8 format but has no .comfy_quant spec", "is '
        'missing tensors").',
    ),
    Rule(
        "QC751",
        "musubi-format-unsupported",
        E,
        "format musubi does not load pre-quantized",
        _fails(),
        None,
        "Every .comfy_quant tensor names format int8_tensorwise (the MiniMax H3 text encoder: "
        "or nvfp4 with int8_tensorwise embeddings, QC763).",
        "musubi loads pre-quantized DiT files only as ConvRot INT8; any other format "
        "(FP8, NVFP4, MXFP8, W4A4, W4A8, AWQ) is refused. 0.3.6's NVFP4 reader serves only "
        "MiniMax H3's Qwen3-VL text encoder.",
        '{"format": "float8_e4m3fn"}',
        "Quantize the model for musubi with ConvRot INT8 (int8_tensorwise, convrot true), or "
        "give it the BF16 model and let it quantize at load.",
        f'{DECODE} ("unsupported .comfy_quant format"), called by '
        "inspect_convrot_int8_artifact after the tensor checks (an FP8 file stops earlier at "
        f'"weight must be INT8/I8"); {PARSE} ("Unsupported comfy_quant format for ... Only '
        'ConvRot INT8 ... is supported"), in the pre-scan of every marker.',
    ),
    Rule(
        "QC752",
        "musubi-convrot-required",
        E,
        'int8_tensorwise marker without "convrot" at its top level',
        _fails(),
        None,
        "Every int8_tensorwise .comfy_quant has a top-level convrot that is true (725869d: "
        "exactly true, QC758).",
        "musubi implements INT8 only with the ConvRot rotation; plain int8_tensorwise (convrot "
        "absent, false, 0, null or empty) or convrot only inside params is refused.",
        '{"format": "int8_tensorwise"}',
        "Requantize with ConvRot (the rotation changes the weights: setting the flag alone is "
        "wrong).",
        f'{DECODE} (`values.get("convrot") is not True`, ".comfy_quant convrot must be true"); '
        f'{PARSE} (`not spec.get("convrot")`, "Unsupported comfy_quant format").',
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
        f'("does not divide input width"); {PARSE} and _is_power_of_4 ("Invalid '
        'convrot_groupsize ... (must be a power of 4, e.g. 64 or 256)"; its float logarithm '
        f'also refuses 4**29 and a few larger powers, wider than any K); {LOAD} ("in_features '
        '... not divisible by group size").',
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
        "fails here) or rank. 0.3.6 checks the dtype in its gate; a weight of another rank "
        "stops it at `shape[1]` (1-D) or at the model's strict load_state_dict.",
        "float8_e4m3fn layer: F8_E4M3 weight with an F32 weight_scale",
        "Requantize as ConvRot INT8, or give musubi the BF16 model.",
        f'{INSPECT} ("weight must be INT8/I8", "weight must be two-dimensional"); {LOAD} '
        '("Pre-quantized ConvRot layer ... must be int8, got ..."; the rank [READ]).',
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
        "musubi refuses a scalar or [N] scale (both valid for ComfyUI) and a weight_scale of "
        "any other dtype (0.3.6 passes a scale_weight of another dtype through, QC759).",
        "int8_tensorwise ConvRot layer with an F32 [N] weight_scale",
        "Reshape the scale to [N, 1] (same values: lossless) or repeat a scalar into it; "
        "convert another float dtype to F32.",
        f'{INSPECT} ("scale must be FP32/F32", "scale shape must be (N, 1)"); {LOAD} '
        '("Pre-quantized ConvRot scale ... must be F32", "scale shape must be (N, 1)").',
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
        "musubi refuses a marker of any other rank before it reads the marker.",
        "blocks.0.attn.qkv.comfy_quant U8 [1, 71]",
        "Rewrite the marker as a 1-D U8 tensor (same bytes).",
        f'{INSPECT} (".comfy_quant must be one-dimensional"); {NEW}/modules/'
        'comfy_quant_utils.py decode_comfy_quant_spec ("expected 1D uint8").',
    ),
    Rule(
        "QC757",
        "musubi-duplicate-scale",
        E,
        "both weight_scale and scale_weight for one module",
        _fails(),
        None,
        "A module has at most one of weight_scale and scale_weight.",
        "musubi renames .weight_scale to .scale_weight. 725869d refuses the file when the two "
        "names meet; 0.3.6 keeps whichever comes later in the header (the scale_weight one "
        "unchecked), so the layer may run with the other scale.",
        "blocks.0.attn.qkv.weight_scale beside blocks.0.attn.qkv.scale_weight",
        "Keep one of the two scale tensors.",
        f"{CONVROT} canonicalize_convrot_int8_key and inspect_convrot_int8_artifact ("
        f'"Duplicate normalized safetensors key"); {LOAD} (weight_scale stored as '
        "scale_weight, scale_weight passed through: the later assignment wins) [READ].",
    ),
    Rule(
        "QC758",
        "musubi-convrot-truthy",
        E,
        "convrot true-like but not true: musubi 725869d refuses it",
        _fails(),
        None,
        'A ConvRot marker\'s convrot is the JSON value true (not 1, "true" or another '
        "non-empty value).",
        "725869d wants convrot to be exactly true; 0.3.6 tests it for truth only and loads "
        "the layer as ConvRot.",
        '{"format": "int8_tensorwise", "convrot": 1, "convrot_groupsize": 256}',
        'Write "convrot": true.',
        f'{DECODE} (`values.get("convrot") is not True`); {PARSE} (`not spec.get("convrot")`) '
        f"and {NEW}/modules/comfy_quant_utils.py classify_comfy_quant_spec.",
    ),
    Rule(
        "QC759",
        "musubi-scale-weight-dtype",
        E,
        "scale_weight not F32: musubi 725869d refuses it",
        _fails(),
        None,
        "A ConvRot module's scale stored as scale_weight is F32.",
        "725869d checks the scale's dtype under either name; 0.3.6 checks only a weight_scale "
        "and passes a scale_weight through as the layer's scale (its shape is still checked, "
        "QC755).",
        "blocks.0.attn.qkv.scale_weight F16 [64, 1] with an I8 weight and a ConvRot marker",
        "Convert the scale to F32 (lossless from F16/BF16).",
        f'{INSPECT} ("scale must be FP32/F32"); {LOAD} (only keys ending .weight_scale are '
        "dtype-checked; other keys pass through).",
    ),
    Rule(
        "QC760",
        "musubi-byte-weight-unmarked",
        E,
        "weight stored in one byte without a .comfy_quant: musubi 0.3.6 refuses it",
        _fails(),
        None,
        "Every weight of a one-byte dtype (U8, BOOL, F8_E4M3, F8_E5M2; I8 is QC750) has a "
        ".comfy_quant marker.",
        "0.3.6's loaders take a one-byte weight without a marker for an already-quantized "
        "layer they cannot read and refuse it (legacy scaled_fp8, a marker only in the header); "
        "725869d let it through. MiniMax H3's text encoder loader, given a file without any "
        "marker, casts F8 weights to BF16 instead.",
        "blocks.0.attn.qkv.weight F8_E4M3 [64, 64], no marker and no weight_scale",
        "Give musubi the BF16 model, or a ConvRot INT8 file with .comfy_quant markers.",
        f'{LOAD} and {NVFP4}._convert_key ("Layer ... is already in ... format but has no '
        f'.comfy_quant spec"); {TE} (no marker: floating tensors cast to the model dtype).',
    ),
    Rule(
        "QC761",
        "musubi-dtype-unreadable",
        E,
        "tensor dtype musubi 0.3.6's reader has no torch dtype for",
        _fails(),
        None,
        "Every tensor with data is F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E5M2 or "
        "F8_E4M3.",
        "0.3.6's loaders read every tensor with MemoryEfficientSafeOpen, whose dtype table has "
        "no entry for the other safetensors dtypes (U16, U32, U64, F8_E8M0, F4, F6): reading "
        "one stops the load with a TypeError. 725869d's header gate read only the markers.",
        "an MXFP8 weight_scale stored as F8_E8M0",
        "Store the tensor in a dtype of that table, or leave it out of the file musubi loads.",
        f"{NEW}/utils/safetensors_utils.py MemoryEfficientSafeOpen._get_torch_dtype and "
        f"get_tensor (`byte_tensor.view(None)`); {LOAD} (get_tensor for every key).",
    ),
    Rule(
        "QC762",
        "musubi-text-encoder-formats",
        E,
        "MiniMax H3 text encoder mixing formats musubi 0.3.6 refuses",
        _fails(),
        None,
        "A Qwen3-VL-32B (MiniMax H3) text encoder's markers are all ConvRot INT8, or NVFP4 "
        "with int8_tensorwise (no ConvRot) layers.",
        "0.3.6 routes the text encoder by the set of its markers' formats: ConvRot INT8 alone "
        "to the ConvRot loader, NVFP4 (+ int8_tensorwise) to the NVFP4 loader; any other set "
        "(plain INT8 alone, ConvRot with NVFP4, FP8) is refused before a tensor is loaded.",
        "a text encoder with nvfp4 MLPs and ConvRot INT8 attention",
        "Quantize the text encoder all ConvRot INT8, or NVFP4 with an INT8 embedding.",
        f'{TE} (detect_comfy_quant_formats; "Unsupported ComfyUI quantization format '
        'combination in text encoder checkpoint").',
    ),
    Rule(
        "QC763",
        "musubi-text-encoder-nvfp4",
        E,
        "NVFP4 text-encoder layer: musubi 725869d refuses it, 0.3.6 loads it",
        _fails(),
        None,
        "A MiniMax H3 text encoder is ConvRot INT8 for musubi 725869d.",
        "725869d loads the text encoder through its ConvRot INT8 gate, which refuses NVFP4 "
        "and plain int8_tensorwise layers; 0.3.6 loads NVFP4 Linears (+ AWQ pre_quant_scale) "
        "with an int8_tensorwise embedding through NvFp4Quantizer.",
        "qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors (NVFP4 Linears, INT8 embed_tokens)",
        "Use musubi-tuner 0.3.6 or later, or the ConvRot INT8 text encoder.",
        f"{DECODE} (725869d); {TE} and {NVFP4}.load_and_quantize (0.3.6).",
    ),
    Rule(
        "QC764",
        "musubi-nvfp4-layout",
        E,
        "NVFP4 text-encoder layer musubi 0.3.6's NVFP4 loader refuses",
        _fails(),
        None,
        "In a MiniMax H3 NVFP4 text encoder every nvfp4 module has a U8 [N, K/2] weight with "
        "K % 16 == 0, an F8_E4M3 weight_scale of roundup(N, 128) x roundup(K/16, 4) elements, "
        "an F32 scalar weight_scale_2 and at most a 1-D float pre_quant_scale of K; every "
        "int8_tensorwise module an I8 weight and an F32 [N, 1] weight_scale only; no "
        "weight_scale, weight_scale_2 or pre_quant_scale without a marker.",
        "NvFp4Quantizer checks each tensor against its module's format and refuses the first "
        "that does not fit, then the missing ones.",
        "nvfp4 layer with a [1] weight_scale_2 (not a scalar)",
        "Write the layer as comfy-kitchen does (swizzled F8_E4M3 block scales, F32 scalar "
        "weight_scale_2).",
        f'{NVFP4}._convert_key and _validate_completeness ("NVFP4 block scale ... must be '
        'F8_E4M3", "NVFP4 per-tensor scale ... must be a F32 scalar", "NVFP4 weight ... must '
        'be 2D uint8", "not a multiple of 16", "Pre-quantized module ... is missing tensors", '
        '"block scale has ... elements").',
        follows=("QC762",),  # the file is refused before its layers are read
    ),
    Rule(
        "QC765",
        "musubi-text-encoder-module-kind",
        E,
        "quantized text-encoder module of a kind musubi 0.3.6 cannot patch",
        _fails(),
        None,
        "In a MiniMax H3 text encoder, ConvRot INT8 and NVFP4 layers are Linears and "
        "int8_tensorwise layers of the NVFP4 file are embeddings (model.embed_tokens, "
        "visual.pos_embed).",
        "0.3.6 patches each quantized module of the model after loading: a ConvRot or NVFP4 "
        "module must be an nn.Linear, an int8_tensorwise one of an NVFP4 file an nn.Embedding; "
        "any other raises.",
        "model.embed_tokens quantized ConvRot INT8",
        "Keep the embeddings BF16 (ConvRot) or int8_tensorwise (NVFP4 files), the Linears "
        "quantized.",
        f'{NEW}/modules/convrot_int8_utils.py apply_convrot_int8_monkey_patch ("ConvRot INT8 '
        f'state dict declares missing module"); {NEW}/modules/nvfp4_utils.py '
        'apply_nvfp4_monkey_patch ("is not an nn.Linear in the model", "is not an '
        "nn.Embedding\"); the module kinds of transformers' Qwen3VLModel [READ].",
        follows=("QC762",),
    ),
    Rule(
        "QC766",
        "musubi-h3-header",
        E,
        "MiniMax H3 DiT header musubi 0.3.6 refuses",
        _fails(),
        None,
        "A MiniMax H3 DiT file has unique tensor names (weight_scale read as scale_weight); a "
        "pruned one (adaln_t_table) has that table F32 [1025, 8], no time_embedder and every "
        "AdaLN projection 8 inputs wide; a full one carries the published transformer config "
        "in __metadata__.config and no other metadata entry naming fp8 or nvfp4 (nor convrot, "
        'int8 or "quantized" without .comfy_quant tensors).',
        "0.3.6 classifies the H3 transformer from its header before loading a tensor, and "
        "refuses a full file without the config its loader builds the model from, or whose "
        "metadata names another quantization. 725869d's gate did not read the metadata.",
        "a ConvRot INT8 H3 DiT whose __metadata__ has no config entry",
        "Copy the released file's __metadata__ (config and all) into the quantized file; keep "
        "FP8/NVFP4 names out of its other entries.",
        f"{H3} classify_h3_transformer, parse_h3_transformer_config, "
        "_read_h3_tensor_headers, _require_pruned_adaln_header, _PUBLISHED_CONFIG_FIELDS; "
        f"{NEW}/minimax_h3/checkpoint.py load_safetensors_metadata.",
    ),
]
