"""sglang's own rules (QC601-QC604, QC611-QC624, QC630-QC638): what its loaders support for
the file as a whole (formats, mixes, config constructors, the header path, each release's
marker rules, each loader's verdict)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.rules.upstream import (
    SGFSDP,
    SGH3,
    SGLIN,
    SGQ,
    SGQC,
    SGRF,
    SGSPEC,
    SGTE,
    SGTL,
)

E, INFO = Severity.ERROR, Severity.INFO

#: QC631-QC638: what each of sglang's loaders does with the file (rules/sglang/loaders.py);
#: every finding of these rules names the loader it concerns (`data["loaders"]`).
W = Severity.WARNING
_OVERRIDE = (
    "sglang generate --transformer-weights-path FILE (every DiT but MiniMax-H3) resolves the "
    "file's quantization in _resolve_quant_config -> _resolve_weight_override_quantization: "
    "the header path (get_quant_config_from_safetensors_metadata), the header declarations "
    "(_quantization_metadata, quantization_config, merged), then the NVFP4 inference "
    "(build_nvfp4_config_from_safetensors_list). The comfy_quant markers are never read."
)
_COMFYUI = (
    "The --comfyui-mode single-file loader (0.5.21+) reads comfy_quant markers only for the "
    "specs that have them: MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (quant_markers), "
    "both from 0.5.22. Every other spec (Flux, Qwen-Image, Z-Image; every spec in 0.5.21) "
    "builds its linears unquantized, and fsdp_load casts each stored tensor to the parameter "
    "dtype (.to(dtype=target_dtype)) before the weight_loader."
)
_WHEELS = "sglang 0.5.19-0.5.23 PyPI wheels"


RULES = [
    Rule(
        "QC601",
        "format-unsupported-by-sglang",
        E,
        "format sglang 0.5.23 does not load",
        effects("fails", "none"),
        Safety.UNSAFE,
        "Layers meant for sglang use float8_e4m3fn, int8_tensorwise, nvfp4, mxfp8, "
        "asym_w4a8_int8 or convrot_w4a4.",
        "float8_e5m2 and awq_w4a16 pass sglang's inspector but its resolver refuses them "
        '("Unsupported Comfy quantization format(s)").',
        '{"format": "float8_e5m2"}',
        "`quantcheck fix --target sglang --unsafe-fixes` changes the numbers: it requantizes "
        "float8_e5m2 layers to float8_e4m3fn and dequantizes other layers (awq_w4a16) to BF16, "
        "which sglang loads unquantized (a bigger file). Without --unsafe-fixes, fix changes "
        "nothing here.",
        "sglang 0.5.23 resolve_comfy_checkpoint_quantization (cases fp8_e5m2_marker, "
        "unknown_format_awq, recorded).",
    ),
    Rule(
        "QC602",
        "format-mix-unsupported",
        E,
        "mix of formats sglang cannot resolve",
        effects("fails", "none"),
        None,
        "The set of formats in one checkpoint is one sglang resolves: a single format, or "
        "int8_tensorwise beside asym_w4a8_int8, convrot_w4a4 or nvfp4.",
        "Mixed files common in ComfyUI (FP8 + INT8, FP8 + NVFP4) stop sglang's resolver.",
        "float8_e4m3fn layers beside int8_tensorwise layers",
        "Requantize the minority format, or keep separate files per format.",
        f"sglang 0.5.23 resolve_comfy_checkpoint_quantization ({SGQ}, recorded).",
    ),
    Rule(
        "QC603",
        "sglang-constructor-refuses",
        E,
        "sglang's config class refuses a layer",
        effects("fails", "none"),
        None,
        "Each marker passes the constructor of the config class sglang picks (e.g. INT8 "
        "companions of W4A8/NVFP4 must be embedding markers, not ConvRot linears).",
        'sglang fails at load with "Unsupported Comfy W4A8 format" / "Unsupported Comfy '
        'NVFP4 companion".',
        "asym_w4a8_int8 layers beside an int8_tensorwise ConvRot linear",
        "Quantize the companion layer in the main format, or drop its convrot only if it is an "
        "embedding.",
        f"sglang 0.5.23 KitchenW4A8Config and ComfyNvfp4Config constructors ({SGQC}; cases "
        "w4a8_with_int8_convrot_linear, "
        "nvfp4_with_int8_convrot_linear, recorded).",
    ),
    Rule(
        "QC604",
        "quant-format-mxfp8-conflict",
        E,
        "quant_format=mxfp8 beside other layers",
        effects("fails", "none"),
        None,
        "A file whose __metadata__.quant_format is mxfp8 (on every shard) holds only MXFP8 "
        "layers of shape F8_E4M3 [N, K] with U8 [N, K/32] scales.",
        "sglang treats every F8/I8/U8 weight as MXFP8 then; any other layer stops the load, "
        "and shards that disagree on quant_format turn the rule off.",
        "quant_format=mxfp8 with an int8_tensorwise layer",
        "Remove quant_format and use explicit markers, or quantize every layer as MXFP8.",
        f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}), quant_format=mxfp8 synthesis "
        "(cases mxfp8_quant_format_with_int8_layer, "
        "mxfp8_mixed_quant_format_shards, recorded).",
    ),
    Rule(
        "QC611",
        "sglang-0518-markers-not-read",
        E,
        "sglang 0.5.18 does not read comfy_quant markers",
        effects("none", "none"),
        None,
        "The file's quantization is one sglang 0.5.18 recognises: NVFP4 layers (found from "
        "their tensors), or a header _quantization_metadata (format_version + layers) with a "
        'layer format containing "float8", which makes the whole file FP8 (QC616).',
        "sglang 0.5.18 has no marker inspector: INT8, W4A8, W4A4 and MXFP8 Comfy files, and "
        "files whose layers are marked only by .comfy_quant tensors, are not recognised as "
        "quantized (fails on 0.5.18 only; from 0.5.19 on the inspector reads them).",
        "int8_tensorwise ConvRot layers marked by .comfy_quant tensors",
        "Use sglang >= 0.5.19.",
        "sglang 0.5.18 wheel, " + SGQ + ": no inspect_comfy_quant_markers; "
        "get_quant_config_from_safetensors_metadata / _build_nvfp4_config_from_safetensors_"
        "files only (consumers.md 1.2, 2.1); run by tests/rules/sglang/diff. [GUESS]: that "
        "0.5.18 computes a rotated NVFP4 layer wrongly (ModelOpt ignores convrot; needs a "
        "GPU to run).",
    ),
    Rule(
        "QC612",
        "sglang-0519-markers-not-identical",
        E,
        "header and tensor markers of a layer differ (sglang 0.5.19)",
        effects("none", "none"),
        Safety.SAFE,
        "Every marker source of a layer (header entry, tensor marker, each shard) holds the "
        "same object.",
        'sglang 0.5.19 requires the sources of one prefix to be identical ("Conflicting '
        'Comfy quantization markers"); from 0.5.20 on they are merged field by field.',
        'header {"format": "int8_tensorwise"} and tensor {"format": "int8_tensorwise", '
        '"per_row": true}',
        "Write one marker per layer (the merged fields as the tensor marker, header entry "
        "dropped).",
        "sglang 0.5.19 inspect_comfy_quant_markers (" + SGQ + ", whole-object comparison; "
        "0.5.20 _merge_comfy_quant_marker), run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC613",
        "sglang-0519-int8-marker-refused",
        E,
        "INT8 marker sglang 0.5.19's config class refuses",
        effects("none", "none"),
        Safety.UNSAFE,
        "In an INT8-only or W4A4 file every int8_tensorwise marker sets convrot: true; beside "
        "W4A8 an INT8 companion has a scalar scale, beside NVFP4 a row-wise one.",
        "sglang 0.5.19's KitchenInt8Config has no embedding exemption (\"Serialized "
        'kitchen_int8 layer X must set convrot=true"): a ConvRot file with a plain INT8 '
        "embedding fails; 0.5.20 exempts INT8 embeddings.",
        "ConvRot int8_tensorwise linears beside a plain int8_tensorwise embedding",
        "Use sglang >= 0.5.20; for 0.5.19 requantize the layer with ConvRot (a marker that "
        "already names convrot_groupsize only lost convrot: true, which fix sets).",
        "sglang 0.5.19 configs/kitchen_int8_config.py, configs/kitchen_w4a8_config.py, "
        "comfy_nvfp4.py constructors (" + SGQC + "), run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC614",
        "sglang-0519-nvfp4-needs-fpmm",
        E,
        "NVFP4 layer without full_precision_matrix_mult (sglang 0.5.19)",
        effects("none", "none"),
        Safety.SAFE,
        "Every nvfp4 marker sets full_precision_matrix_mult: true.",
        "sglang 0.5.19's ComfyNvfp4Config refuses NVFP4 layers without it (\"Comfy NVFP4 "
        'layer X must request full_precision_matrix_mult"); 0.5.20 drops the requirement.',
        '{"format": "nvfp4"}',
        "Set full_precision_matrix_mult: true (fix --target sglang@0.5.19 does).",
        f"sglang 0.5.19 comfy_nvfp4.py ComfyNvfp4Config ({SGQC}), run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC615",
        "sglang-mxfp8-weight-load",
        E,
        "MXFP8 layers stop sglang 0.5.19-0.5.21 and 0.5.23 at weight load",
        effects("fails", "none"),
        None,
        "No MXFP8 layers when the target is sglang 0.5.19, 0.5.20, 0.5.21 or 0.5.23.",
        "Stage: weight load, after the inspector and the layer build. MXFP8Config builds SRT's "
        "Fp8LinearMethod (class name Fp8LinearMethod, in WEIGHT_LOADER_V2_SUPPORTED; 0.5.23's "
        "_uses_weight_loader_v2 finds it in ComfyMXFP8LinearMethod's MRO), so the DiT linear "
        "registers weight_loader_v2, which calls the SRT parameters' "
        "load_column_parallel_weight / load_row_parallel_weight without their required "
        "tp_rank: TypeError, the load stops, even for a clean comfy-kitchen MXFP8 file. 0.5.22 "
        "builds ComfyMXFP8LinearMethod, not in the list: the v1 weight_loader loads a plain "
        "MXFP8 file byte-exact (PR #38028 also stops re-swizzling its scales); there an "
        "F8_E8M0 block scale is cast into the uint8 weight_scale_inv by fsdp_load's "
        ".to(dtype) (2**(e-127) as an integer: 0 for every byte < 127, degraded) and a padded "
        "scale fails the weight_loader's shape assertion (QC308).",
        '{"format": "mxfp8"}',
        "Use sglang 0.5.22, or another format for the other releases.",
        "sglang 0.5.19-0.5.23 wheels: multimodal_gen/runtime/layers/quantization/mxfp8.py "
        "MXFP8Config.get_quant_method, multimodal_gen/runtime/layers/linear.py "
        "WEIGHT_LOADER_V2_SUPPORTED / ColumnParallelLinear.weight_loader_v2, srt/layers/"
        "parameter.py load_column_parallel_weight(loaded_weight, tp_rank), "
        "multimodal_gen/runtime/loader/fsdp_load.py load_model_from_full_model_state_dict "
        "(read; the stages before it are run by tests/rules/sglang/diff).",
    ),
    Rule(
        "QC616",
        "sglang-header-path",
        INFO,
        "sglang reads this file through its header path, not its marker rules",
        effects("none", "none"),
        None,
        "Says which of sglang's two readers takes the file, per release: the header path "
        "(get_quant_config_from_safetensors_metadata on __metadata__._quantization_metadata; "
        "0.5.18 also _build_nvfp4_config_from_safetensors_files) or the comfy_quant marker "
        "inspector.",
        "sglang's text-encoder loader (0.5.19-0.5.23) asks the header path first and its "
        "--transformer-weights-path loader asks only the header path: a header with "
        "format_version and layers, no quant_method, and any layer format containing "
        '"float8" becomes one whole-model Fp8Config (0.5.23: a "rowwise-float8_e4m3fn" '
        "layer becomes RowwiseFp8Config), and the markers are never inspected, so the marker "
        "rules do not apply to sglang for that file (the MiniMax-H3 and ComfyUI single-file "
        "loaders read markers first). The JSON summary's sglang target carries the same as "
        "`path`.",
        '_quantization_metadata {"format_version": "1.0", "layers": {"blocks.0.attn.qkv": '
        '{"format": "float8_e4m3fn"}}}',
        "Nothing to do when the whole file is FP8; otherwise see the other header-path "
        "findings (QC617-QC623), or drop the header declaration so sglang reads the markers.",
        f"sglang 0.5.18-0.5.23 wheels: {SGQ} get_quant_config_from_safetensors_metadata, "
        f"handle_fp8_metadata_format (identical 0.5.18-0.5.22), 0.5.23 "
        f"_get_serialized_quant_config; callers {SGTE} _get_encoder_quant_config (header, "
        f"then quanto, then markers) and {SGTL} _resolve_weight_override_quantization / "
        "_resolve_quant_config; run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC617",
        "sglang-header-fp8-sweeps-layers",
        Severity.WARNING,
        "sglang's header path loads non-FP8 layers as FP8",
        effects("degraded", "none"),
        None,
        "When sglang's header path builds its whole-model Fp8Config, every quantized layer of "
        "the file is float8_e4m3fn.",
        "Stage: weight load. handle_fp8_metadata_format turns the whole header into one "
        'Fp8Config as soon as one layer format contains "float8": every marked layer is then '
        "built as a per-tensor FP8 linear (Fp8Config has no per-layer formats and the header "
        "sets no ignored_layers), and fsdp_load casts each stored tensor to its parameter's "
        "dtype before the weight_loader (.to(dtype=target_dtype)): a layer with a one-element "
        "scale and an I8, BF16 or F8_E5M2 weight loads without an error, its values rounded "
        "to e4m3 (a mixed FP8 + INT8 file: 36 % of the INT8 values change, about 2.7 % output "
        "error). Layers that do not fit the FP8 parameters fail instead (QC630).",
        "float8_e4m3fn and scalar-scaled int8_tensorwise layers declared in one "
        "_quantization_metadata",
        "Keep one format per file for sglang, or drop the header declaration so sglang's "
        "marker inspector reads the layers.",
        f"sglang 0.5.18-0.5.23 {SGQ} handle_fp8_metadata_format, {SGQC}fp8.py "
        f"Fp8Config.get_quant_method / Fp8LinearMethod.create_weights, {SGFSDP} (read; the "
        "config step is run by tests/rules/sglang/diff, and the weight load of each layer "
        "through Fp8LinearMethod.create_weights and the linear's weight_loader_v2).",
    ),
    Rule(
        "QC630",
        "sglang-header-fp8-weight-load",
        E,
        "sglang's whole-model FP8 header config cannot load these layers",
        effects("fails", "none"),
        None,
        "When sglang's header path builds its whole-model Fp8Config, every quantized layer "
        "stores a 2-D [N, K] weight and a one-element weight_scale.",
        "Stage: weight load. The whole-model Fp8Config (QC616, QC617) builds each marked layer "
        "as Fp8LinearMethod: a float8_e4m3fn [N, K] weight and a PerTensorScaleParameter [1] "
        "scale. A row-wise [N, 1] or block scale (FP8 row-wise or block-wise, NVFP4, MXFP8, "
        "INT8 row scales) or a packed / non-2-D weight (NVFP4, W4A8, W4A4) does not fit: the "
        "parameter's load_column_parallel_weight asserts equal shapes and fsdp_load stops "
        "('Failed to shard/load parameter …'). The file fails, it does not load degraded.",
        "_quantization_metadata declaring float8_e4m3fn with an F32 [N, 1] weight_scale, or "
        "float8_e4m3fn beside nvfp4 layers",
        "Write FP8 with a per-tensor scale for sglang's header path, or drop the header "
        "declaration so sglang's marker inspector reads the layers.",
        f"sglang 0.5.18-0.5.23 {SGQ} handle_fp8_metadata_format, {SGQC}fp8.py "
        f"Fp8LinearMethod.create_weights, {SGLIN} ColumnParallelLinear.weight_loader_v2, "
        f"srt/layers/parameter.py PerTensorScaleParameter, {SGFSDP} (read; run by "
        "tests/rules/sglang/diff: the layer built by create_weights, the file's tensors "
        "loaded through its weight_loader).",
    ),
    Rule(
        "QC618",
        "sglang-header-ignored-silently",
        Severity.WARNING,
        "sglang's header path ignores this header declaration without a word",
        effects("none", "none"),
        None,
        "A header _quantization_metadata meant for sglang's header path is one it reads: "
        "valid JSON, with format_version beside layers.",
        "get_quant_config_from_safetensors_metadata returns None without a message when the "
        "JSON does not parse (it then tries __metadata__.quantization_config) or when "
        "format_version is missing, and every exception while it builds a config is "
        "swallowed (except Exception: return None). sglang 0.5.19+ then reads the markers; "
        "0.5.18 sees an unquantized file (QC611).",
        '_quantization_metadata {"layers": {"blocks.0.attn.qkv": {"format": '
        '"float8_e4m3fn"}}} without format_version',
        'Write valid JSON with "format_version" (ComfyUI writes "1.0").',
        f"sglang 0.5.18-0.5.23 {SGQ} get_quant_config_from_safetensors_metadata (read; the "
        "None is run by tests/rules/sglang/diff).",
    ),
    Rule(
        "QC619",
        "sglang-0518-nvfp4-group-size",
        Severity.WARNING,
        "sglang 0.5.18 infers one NVFP4 group size from the first layer",
        effects("none", "none"),
        None,
        "Every NVFP4 layer's weight columns and block-scale columns give group size 16 "
        "(2 * weight.shape[1] / scale.shape[1]).",
        "sglang 0.5.18 builds its ModelOpt NVFP4 config (_build_nvfp4_config_from_"
        "safetensors_files) with the group size of the first NVFP4 layer in name order and "
        "applies it to every layer; padded or swizzled block scales (N % 128, K % 64) give "
        "another number and the layers compute with the wrong grouping, without an error. "
        "From 0.5.19 on the marker inspector requires (N, K/16) scales.",
        "blocks.0.attn.qkv.weight U8 [128, 24] with weight_scale F8_E4M3 [128, 4]",
        "Use sglang >= 0.5.19, or write NVFP4 layers with N % 128 == 0 and K % 64 == 0.",
        f"sglang 0.5.18 {SGQ} _build_nvfp4_config_from_safetensors_files and "
        "_infer_nvfp4_group_size_from_shapes (read); run by tests/rules/sglang/diff. "
        "[GUESS] for the compute step (needs a GPU).",
    ),
    Rule(
        "QC620",
        "header-format-rowwise-fp8",
        E,
        "sglang >= 0.5.23 header-only rowwise FP8 format",
        effects("none", "fails"),
        None,
        'The header formats "rowwise-float8_e4m3fn" and "bf16" are read only by sglang '
        ">= 0.5.23's rowwise FP8 path (not comfy_quant marker formats).",
        "sglang 0.5.23 reads them from _quantization_metadata (RowwiseFp8Config). Older "
        'sglang sees "float8" in the name and builds its whole-model per-tensor Fp8Config, '
        "whose (1,) scales do not take the [N] row-wise ones (degraded or fails at weight "
        "load; [GUESS]: not run on a GPU). ComfyUI reads header layers as markers and does "
        "not know the format.",
        '"layers": {"blocks.0.attn.qkv": {"format": "rowwise-float8_e4m3fn"}}',
        "Use sglang >= 0.5.23; for ComfyUI requantize the layers (e.g. float8_e4m3fn with a "
        "per-tensor scale).",
        f"sglang 0.5.23 {SGRF} (FP8_FORMAT, BF16_FORMAT) and {SGQ} "
        "_get_serialized_quant_config; 0.5.18-0.5.22 handle_fp8_metadata_format; run by "
        "tests/rules/sglang/diff. ComfyUI effect as for any unknown format (QC213).",
    ),
    Rule(
        "QC621",
        "rowwise-fp8-format-version",
        E,
        'rowwise FP8 header without format_version "1.1"',
        effects("fails", "none"),
        None,
        'A header declaring "rowwise-float8_e4m3fn" layers has format_version "1.1" (the string).',
        'sglang 0.5.23 raises RowwiseFp8Error ("unsupported quantization format_version '
        "…; expected one of ['1.1']\") and the error is not caught: the load stops. Older "
        "releases only need the key to exist.",
        '{"format_version": "1.0", "layers": {"blocks.0.attn.qkv": {"format": '
        '"rowwise-float8_e4m3fn"}}}',
        'Set "format_version": "1.1" once the layers follow the rowwise contract.',
        f"sglang 0.5.23 {SGRF} RowwiseFp8Config._from_metadata (SUPPORTED_FORMAT_VERSIONS); "
        "run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC622",
        "rowwise-fp8-header-contract",
        E,
        "rowwise FP8 header sglang 0.5.23 refuses",
        effects("fails", "none"),
        None,
        'A header declaring "rowwise-float8_e4m3fn" layers has a non-empty layers map whose '
        'every entry is "rowwise-float8_e4m3fn" or "bf16", and quant_configs['
        '"rowwise-float8_e4m3fn"] = {"scale_recipe": "rowwise"}.',
        'sglang 0.5.23 raises RowwiseFp8Error ("unknown quant format … for layer …", '
        '"missing quant_configs[…] layout descriptor", "unsupported FP8 scale_recipe …") '
        "and the load stops: other formats cannot share a rowwise file.",
        '"layers": {"a": {"format": "rowwise-float8_e4m3fn"}, "b": {"format": '
        '"float8_e4m3fn"}} without quant_configs',
        "Declare every other layer as bf16 (unquantized) and write the quant_configs "
        "descriptor, or use comfy_quant markers instead of the rowwise header.",
        f"sglang 0.5.23 {SGRF} RowwiseFp8Config._from_metadata; run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC623",
        "rowwise-fp8-layer-tensors",
        E,
        "rowwise FP8 layer tensors sglang 0.5.23 refuses",
        effects("fails", "none"),
        None,
        "Each rowwise-float8_e4m3fn layer stores an F8_E4M3 2-D weight [N, K], an F32 "
        "weight_scale [N] and optionally an F32 input_scale [1]; no other layer stores a "
        "weight_scale or input_scale.",
        "sglang 0.5.23 checks these tensors in _validate_fp8_tensors and raises "
        'RowwiseFp8Error for the first layer in name order that differs ("row-wise scale '
        'must have shape [N]", "expected dtype F8_E4M3", "unexpected quantization tensor … '
        'for a non-FP8 layer").',
        "blocks.0.attn.qkv.weight_scale F32 [128, 1] (a ComfyUI INT8-style per-row scale)",
        "Store the row scales as F32 [N] and the weight as F8_E4M3; drop scales of bf16 layers.",
        f"sglang 0.5.23 {SGRF} _validate_fp8_tensors; run by tests/rules/sglang/diff.",
    ),
    Rule(
        "QC624",
        "sglang-header-path-raises",
        E,
        "sglang's header path raises on a header layer format",
        effects("fails", "none"),
        None,
        "Every layer entry of a header _quantization_metadata (with format_version and "
        "layers) has a string format.",
        'handle_fp8_metadata_format tests `"float8" in format` for each layer until one '
        "matches; a format that is null, a number or true/false before any float8 layer raises "
        "TypeError (\"argument of type 'NoneType' is not iterable\"), which "
        "get_quant_config_from_safetensors_metadata does not catch, so the load stops before "
        "the markers are read.",
        '"layers": {"blocks.0.attn.qkv": {"format": null}}',
        "Write each header layer's format as a string (or drop the entry).",
        f"sglang 0.5.18-0.5.23 {SGQ} handle_fp8_metadata_format (read; run by "
        "tests/rules/sglang/diff).",
    ),
    Rule(
        "QC631",
        "sglang-override-undeclared",
        E,
        "sglang's --transformer-weights-path loader refuses quantized tensors without a header "
        "declaration it supports",
        effects("fails", "none"),
        None,
        "A file loaded with --transformer-weights-path whose tensors are quantized "
        "(.weight_scale, .input_scale, .comfy_quant, or an F8_E4M3 / I8 / U8 weight) declares "
        "its quantization in a way that loader builds a config from.",
        _OVERRIDE + " A file with quantized tensors, no config from the header path or a "
        "quant_method declaration, and no NVFP4 tensors to infer from stops with "
        'ValueError("Replacement checkpoint contains quantized tensors but no supported native '
        'quantization declaration") in every release 0.5.19-0.5.23 (the wheels test it: '
        "test_undeclared_quantized_weight_override_fails_closed). Loader: "
        "transformer-weights-path.",
        "int8_tensorwise + convrot layers marked only by .comfy_quant tensors, no "
        "__metadata__ declaration",
        "float8_e4m3fn with a per-tensor scale: declare the layers in the header "
        '(_quantization_metadata {"format_version": "1.0", "layers": {LAYER: {"format": '
        '"float8_e4m3fn"}}}): the header path then builds its whole-model Fp8Config '
        "(handle_fp8_metadata_format); `quantize --to float8_e4m3fn` writes it for sglang "
        "targets. NVFP4 needs nothing (inferred from its tensors). No header declaration "
        "sglang accepts exists for int8_tensorwise, asym_w4a8_int8, convrot_w4a4 or mxfp8 "
        "(ComfyFp8Config, ComfyNvfp4Config and the Kitchen configs refuse to be built from a "
        "declaration): load those with the MiniMax-H3, --comfyui-mode (MiniMax-H3, Qwen-Image "
        "2.1) or text-encoder loaders, which read the markers.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config (the refusal) and "
        "_resolve_weight_override_quantization (detected_quantized_tensors, the declarations); "
        f"{SGQ} get_quant_config_from_safetensors_metadata; run by tests/rules/sglang/diff "
        "(test_transformer_weights_path_loader_agrees).",
    ),
    Rule(
        "QC632",
        "sglang-override-declaration-invalid",
        E,
        "sglang's --transformer-weights-path loader refuses the file's header declaration",
        effects("fails", "none"),
        None,
        "Every _quantization_metadata / quantization_config entry of a file loaded with "
        "--transformer-weights-path is a JSON object, the shards' declarations agree, and the "
        "shards' header configs are of one kind.",
        _OVERRIDE + " _resolve_weight_override_quantization parses both keys of every shard "
        'itself: JSON that does not parse raises ValueError("Invalid KEY in FILE"), JSON that '
        'is not an object ValueError("Invalid KEY in FILE: expected an object"), a field two '
        'shards set differently ValueError("Conflicting checkpoint quantization field ..."), '
        'and two header configs of different kinds ValueError("Conflicting safetensors '
        'quantization declarations"). Loader: transformer-weights-path.',
        '__metadata__ {"_quantization_metadata": "{not json"}',
        "Write the declaration as one JSON object, the same in every shard (or drop it).",
        f"{_WHEELS}: {SGTL} _resolve_weight_override_quantization, _merge_quant_declaration; "
        "run by tests/rules/sglang/diff (test_transformer_weights_path_loader_agrees).",
    ),
    Rule(
        "QC633",
        "sglang-override-nvfp4-degraded",
        W,
        "sglang's --transformer-weights-path loader reads this file through an inferred NVFP4 "
        "config that computes some layers wrongly",
        effects("degraded", "none"),
        None,
        "A file --transformer-weights-path reads through the NVFP4 inference (no header "
        "config) holds only NVFP4 layers the ModelOpt config reads as they are meant.",
        _OVERRIDE + " Without a header config, the NVFP4 tensors (U8 weights with 2-D F8_E4M3 "
        "weight_scale) make build_nvfp4_config_from_safetensors_list a ModelOptFp4Config: "
        "its group size comes from the first layer, convrot is ignored, and every other "
        "quantized layer is excluded and built unquantized, its stored codes cast to the "
        "parameter dtype (F8 weights dequantized with their scale). Loader: "
        "transformer-weights-path.",
        "NVFP4 layers beside float8_e4m3fn layers marked only by .comfy_quant tensors",
        "Keep NVFP4 files NVFP4-only (one group size, no convrot) for --transformer-weights-path.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config, {SGQ} "
        f"build_nvfp4_config_from_safetensors_list, {SGFSDP} (read; the config step run by "
        "tests/rules/sglang/diff).",
    ),
    Rule(
        "QC634",
        "sglang-override-nvfp4-fails",
        E,
        "sglang's --transformer-weights-path loader cannot load this file through its "
        "inferred NVFP4 config",
        effects("fails", "none"),
        None,
        "A file --transformer-weights-path reads through the NVFP4 inference holds no layer "
        "the ModelOpt config cannot load.",
        _OVERRIDE + " The inferred ModelOptFp4Config excludes the non-NVFP4 layers and builds "
        "them unquantized: a packed weight (W4A8, W4A4, ...) does not fit its [N, K] "
        "parameter and the weight_loader's shape assertion stops the load; NVFP4 layers the "
        "ModelOpt route refuses stop it too. Loader: transformer-weights-path.",
        "NVFP4 layers beside asym_w4a8_int8 layers",
        "Keep NVFP4 files NVFP4-only for --transformer-weights-path.",
        f"{_WHEELS}: {SGTL} _resolve_quant_config, {SGQ} "
        f"build_nvfp4_config_from_safetensors_list, {SGFSDP} (read; the config step run by "
        "tests/rules/sglang/diff).",
    ),
    Rule(
        "QC635",
        "sglang-comfyui-mode-unquantized",
        W,
        "sglang's --comfyui-mode loader builds these layers unquantized and casts their "
        "stored codes",
        effects("degraded", "none"),
        None,
        "A marked file meant for --comfyui-mode is loaded through a spec that reads markers.",
        _COMFYUI + " A quantized weight of the logical [N, K] shape is cast (F8 weights "
        "dequantized with their weight_scale, I8 codes taken as values): the model computes "
        "unquantized, from codes without their scale where there is no F8 dequantization. "
        "Loader: comfyui-mode (0.5.21+; the spec of the detected model family, every spec "
        "while it is not detected).",
        "int8_tensorwise layers of a Flux checkpoint loaded with --comfyui-mode",
        "Load the file with a loader that reads the markers (MiniMax-H3, the Qwen-Image 2.1 "
        "spec, the text-encoder loader), or dequantize it for this loader.",
        f"sglang 0.5.21-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer and the specs' "
        f"quant_markers, {SGFSDP} (read).",
    ),
    Rule(
        "QC636",
        "sglang-comfyui-mode-packed",
        E,
        "sglang's --comfyui-mode loader cannot fit these packed layers into unquantized parameters",
        effects("fails", "none"),
        None,
        "A file with packed layers (NVFP4, W4A8, W4A4, AWQ) meant for --comfyui-mode is "
        "loaded through a spec that reads markers.",
        _COMFYUI + " A packed weight stores fewer columns than its [N, K] parameter: the "
        "weight_loader's shape assertion stops the load ('Failed to shard/load parameter'). "
        "Loader: comfyui-mode (0.5.21+).",
        "nvfp4 layers of a Flux checkpoint loaded with --comfyui-mode",
        "Load the file with a loader that reads the markers.",
        f"sglang 0.5.21-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer, {SGFSDP} (read).",
    ),
    Rule(
        "QC637",
        "sglang-comfyui-mode-spec-refuses",
        E,
        "a --comfyui-mode spec that reads markers refuses this file's formats",
        effects("fails", "none"),
        None,
        "The formats of a marked file meant for --comfyui-mode are the ones its marker-reading "
        "specs accept: INT8 ConvRot for MiniMax-H3; no NVFP4 for Qwen-Image 2.1 (its markers "
        "are resolved without the files).",
        _COMFYUI + ' The MiniMax-H3 spec raises ValueError("ComfyUI H3 integrated mode '
        'currently supports serialized INT8 ConvRot quantization") for any other format; the '
        "Qwen-Image 2.1 spec passes its markers to resolve_minimax_h3_checkpoint_quantization "
        'without the files, which raises ValueError("MiniMax-H3 NVFP4 metadata requires '
        'checkpoint files") on NVFP4. Loader: comfyui-mode (0.5.22+).',
        "float8_e4m3fn layers loaded with --comfyui-mode as a MiniMax-H3 checkpoint",
        "Use INT8 ConvRot for MiniMax-H3's integrated mode; load NVFP4 Qwen-Image 2.1 files "
        "with --transformer-weights-path.",
        f"sglang 0.5.22-0.5.23 PyPI wheels: {SGSPEC} load_comfyui_transformer, "
        f"comfyui_checkpoints/qwen_image21.py, {SGH3} resolve_minimax_h3_checkpoint_"
        "quantization (read).",
    ),
    Rule(
        "QC638",
        "sglang-marker-readers-refuse-header-formats",
        E,
        "sglang's marker-reading loaders refuse the header-only rowwise formats",
        effects("fails", "none"),
        None,
        "A file whose markers name the header-only formats (rowwise-float8_e4m3fn, bf16) is "
        "not loaded through a loader that reads the markers first.",
        "The MiniMax-H3 loader (inspect_minimax_h3_safetensors, never the header path while "
        "the file has markers) and the --comfyui-mode specs that read markers hand them to "
        "resolve_comfy_checkpoint_quantization, which has no rowwise format: "
        'NotImplementedError("Unsupported Comfy quantization format(s): ..."), in every '
        "release 0.5.19-0.5.23 (0.5.23's RowwiseFp8Config is reached only through the header "
        "path). Loaders: minimax-h3, comfyui-mode.",
        'a rowwise FP8 file (format_version "1.1", rowwise-float8_e4m3fn and bf16 layers) '
        "loaded as MiniMax-H3",
        "Load rowwise FP8 files with --transformer-weights-path on sglang 0.5.23 (the header "
        "path), or write float8_e4m3fn with per-tensor scales for the marker readers.",
        f"{_WHEELS}: {SGH3} inspect_minimax_h3_safetensors, {SGQ} "
        "resolve_comfy_checkpoint_quantization; run by tests/rules/sglang/diff "
        "(test_minimax_h3_loader_agrees).",
    ),
]
