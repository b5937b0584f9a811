"""QC2xx: comfy_quant marker tensors and `_quantization_metadata` header markers."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import effects, rule_in_doc_order
from quantcheck.rules.upstream import CUI_DIFF, CUI_OPS, CUI_RUN, CUI_SD, SGQ, SGQC

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
SG_MARKER = f"sglang 0.5.23 inspect_comfy_quant_markers ({SGQ}, recorded)"
CUI_MARKER = (
    "ComfyUI reads markers with json.loads(tensor.numpy().tobytes()) "
    "(ComfyUI @0271a469 comfy/ops.py _load_quantized_module ~L1192, read)"
)


_r = rule_in_doc_order  # catalog entries list the prose before the effects


RULES = [
    _r(
        "QC201",
        "marker-invalid-json",
        E,
        "marker bytes are not a JSON document",
        "Each `<layer>.comfy_quant` tensor's bytes decode (as both runtimes do, json.loads on the "
        "raw bytes) to JSON.",
        'sglang stops the whole load with "Invalid Comfy quantization marker"; ComfyUI raises '
        "while building the layer.",
        "bytes 7b 22 66 6f 72 6d 61 74 22 3a 20 00 00 ('{\"format\": ' + NUL padding)",
        "Rewrite the marker from the layer's tensors (`quantcheck fix` adds markers where the "
        "format is unambiguous) or re-export.",
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER}; {CUI_MARKER}; ComfyUI effect inferred.",
        action="rebuild-marker",
    ),
    _r(
        "QC202",
        "marker-not-object",
        E,
        "marker JSON is not an object",
        'The decoded marker is a JSON object such as {"format": "nvfp4"}.',
        'sglang: "Comfy quantization marker … must contain a JSON object"; ComfyUI calls '
        ".get on it and fails.",
        '["nvfp4"] or "nvfp4"',
        'Write the marker as an object: {"format": "nvfp4"}.',
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER} (case marker_json_array); ComfyUI: layer_conf.get on the decoded array "
        f"raises AttributeError ({CUI_OPS} ~L1196; {CUI_DIFF}, case "
        "consumers:int8-marker-list).",
        action="rebuild-marker",
    ),
    _r(
        "QC203",
        "marker-all-zero",
        E,
        "marker bytes are all zero",
        "The marker tensor holds text, not zero bytes.",
        "Zeroed markers come from broken exporters (42 of 200 markers in one official ComfyUI "
        "file); every runtime refuses them.",
        "tensor blocks.3.attn.to_q.comfy_quant = 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "Recreate the marker from the layer's tensors with `quantcheck fix`.",
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER} (case marker_zero_bytes); ComfyUI issue #15567; json.loads raises "
        f"({CUI_OPS} ~L1192; {CUI_DIFF}, case consumers:int8-marker-zeroed).",
        action="rebuild-marker",
    ),
    _r(
        "QC204",
        "marker-dtype-unreadable",
        E,
        "marker stored in a dtype numpy cannot read",
        "Marker tensors are U8 (any 8/16/32/64-bit integer or IEEE float dtype still yields its "
        "raw bytes; BF16, FP8, F4 and F6 do not).",
        'sglang raises TypeError "Got unsupported ScalarType BFloat16"; ComfyUI converts with '
        ".numpy() the same way.",
        "blocks.0.attn.qkv.comfy_quant: BF16 [10]",
        "Store the marker bytes as U8 (`quantcheck fix` relabels the same bytes).",
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER} (case marker_bf16_tensor); ComfyUI effect inferred from the same call.",
        action="relabel-marker",
    ),
    _r(
        "QC205",
        "marker-dtype-not-u8",
        W,
        "marker stored in a dtype other than U8",
        "Marker tensors are U8 [len(bytes)].",
        "Both runtimes read the raw bytes and accept it, but other tools decode values, not bytes.",
        "blocks.0.attn.qkv.comfy_quant: I8 [20]",
        "Relabel the tensor as U8; the bytes stay the same.",
        effects("none", "none"),
        Safety.SAFE,
        f"{SG_MARKER}: integer and IEEE float dtypes yield raw bytes (case msg_marker_i8_dtype).",
        action="relabel-marker",
    ),
    _r(
        "QC206",
        "marker-too-large",
        W,
        "marker tensor over 64 KiB",
        "A marker is small JSON (under 200 bytes in practice); quantcheck reads at most 64 KiB.",
        "A huge marker is a corrupt or hostile file; the layer's format cannot be trusted.",
        "blocks.0.attn.qkv.comfy_quant: U8 [10000000]",
        "Recreate the marker with `quantcheck fix`.",
        effects("none", "none"),
        None,
        "quantcheck's own limit; both runtimes would read any size (read).",
    ),
    _r(
        "QC207",
        "marker-encoding-nonstandard",
        W,
        "marker text has a BOM or is UTF-16/32",
        "Marker bytes are plain UTF-8 JSON as ComfyUI writes them.",
        "json.loads accepts BOMs and UTF-16/32, so both runtimes load it, but tools that decode "
        "UTF-8 do not.",
        "bytes ef bb bf 7b 22 66 6f ... (UTF-8 BOM)",
        "Rewrite the marker as UTF-8 without BOM.",
        effects("none", "none"),
        Safety.SAFE,
        f"{SG_MARKER} (cases msg_marker_utf8_bom, msg_marker_utf16_bom).",
        action="rewrite-marker",
    ),
    _r(
        "QC208",
        "quantization-metadata-invalid",
        E,
        '__metadata__._quantization_metadata is not {"layers": {...}}',
        "The header's _quantization_metadata string is JSON of the form "
        '{"format_version": "1.0", "layers": {"<layer>": {marker}}}.',
        'sglang stops the load ("Invalid _quantization_metadata", "must contain a layers '
        "object\"); ComfyUI's convert_old_quants parses the same string.",
        '__metadata__: {"_quantization_metadata": "{\\"quant_algo\\": \\"NVFP4\\"}"}',
        "Drop the header entry and keep per-tensor markers (`quantcheck fix`).",
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER} (case quantization_metadata_invalid_json); "
        "ComfyUI "
        "effect inferred (ComfyUI @09708eae comfy/utils.py convert_old_quants, read).",
        action="drop-header-metadata",
    ),
    _r(
        "QC209",
        "header-marker-not-object",
        E,
        "a _quantization_metadata layer entry is not an object",
        "Each value of _quantization_metadata.layers is a marker object.",
        'sglang: "Comfy quantization metadata for … must be an object".',
        '"layers": {"blocks.0.attn.qkv": "nvfp4"}',
        'Write the entry as {"format": "nvfp4"}.',
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER}; ComfyUI effect inferred.",
        action="header-entry-to-marker",
    ),
    _r(
        "QC210",
        "marker-conflict",
        E,
        "two marker sources disagree on a field",
        "For one layer, the header entry, the marker tensor and other shards agree on every "
        "field they both set.",
        'sglang stops with "Conflicting Comfy quantization markers"; ComfyUI lets the header '
        "overwrite the tensor marker, so the two runtimes compute different things.",
        'header: {"format": "nvfp4"}, tensor: {"format": "float8_e4m3fn"}',
        "Keep the marker that matches the tensors as one per-tensor marker (`quantcheck fix` "
        "rewrites header entries as tensor markers).",
        effects("fails", "degraded"),
        Safety.SAFE,
        f"{SG_MARKER} (cases conflicting_markers_two_shards, msg_merge_nan_conflict); "
        "ComfyUI overwrite read in comfy/utils.py @09708eae convert_old_quants.",
        action="resolve-conflict",
    ),
    _r(
        "QC211",
        "marker-loose-equality",
        W,
        "two marker sources agree only loosely (true vs 1)",
        "Fields set in several sources have the same JSON type as well as value.",
        "sglang's merge treats true == 1 and 16 == 16.0 as equal and keeps the later one; its "
        "INT8 and W4A8 constructors then require `convrot` to be exactly true.",
        'header: {"convrot": true}, tensor: {"convrot": 1}',
        "Write the same JSON value in every source.",
        effects("none", "none"),
        Safety.SAFE,
        f"{SG_MARKER}, its _merge_comfy_quant_marker (case msg_merge_true_then_1).",
        action="rewrite-marker",
    ),
    _r(
        "QC212",
        "marker-format-missing",
        E,
        "marker has no format",
        'Every marker names its format: {"format": "<one of the eight formats>"}.',
        "ComfyUI raises on the missing key; sglang's resolver reports \"Unsupported Comfy "
        'quantization format(s): None".',
        '{"convrot": true, "convrot_groupsize": 256}',
        "Add the format the layer's tensors are stored in.",
        effects("fails", "fails"),
        None,
        f"{SG_MARKER} and resolve_comfy_checkpoint_quantization (case marker_without_format); "
        'ComfyUI reads layer_conf["format"] and raises "Unknown quantization format" when it '
        "is missing (@0271a469 comfy/ops.py _load_quantized_module ~L1196-1204, read).",
    ),
    _r(
        "QC213",
        "marker-format-unknown",
        E,
        "marker names a format no runtime knows",
        "format is one of float8_e4m3fn, float8_e5m2, int8_tensorwise, nvfp4, mxfp8, "
        "asym_w4a8_int8, convrot_w4a4, awq_w4a16 (exact spelling, lower case).",
        'ComfyUI raises "Unsupported quantization format"; sglang\'s resolver refuses it.',
        '{"format": "NVFP4"} or {"format": "fp8"}',
        "Correct the spelling (quantcheck suggests the closest format).",
        effects("fails", "fails"),
        Safety.SAFE,
        f"{SG_MARKER} and resolve_comfy_checkpoint_quantization (case unknown_format_awq); "
        "ComfyUI @0271a469 comfy/quant_ops.py QUANT_ALGOS, looked up in comfy/ops.py "
        f"_load_quantized_module ~L1206 (KeyError; {CUI_DIFF}, case format-unknown).",
    ),
    _r(
        "QC214",
        "format-third-party",
        E,
        "marker names a format only forks implement",
        "The format is in upstream ComfyUI's QUANT_ALGOS (int8_blockwise, "
        "float8_e4m3fn_rowwise, float8_e4m3fn_blockwise are fork-only).",
        "Neither upstream ComfyUI nor sglang loads these layouts.",
        '{"format": "int8_blockwise", "group_size": 128}',
        "Requantize to a supported format (unsafe: numbers change).",
        effects("fails", "fails"),
        Safety.UNSAFE,
        "ComfyUI @0271a469 comfy/quant_ops.py QUANT_ALGOS and comfy-kitchen 0.2.40 tensor/ "
        "layouts lack them (read); sglang 0.5.23 resolve_comfy_checkpoint_quantization refuses "
        "them (recorded).",
    ),
    _r(
        "QC215",
        "marker-underscore-keys",
        W,
        "producer wrote underscore keys into a marker",
        "Markers carry no keys starting with _ (sglang derives _is_rowwise, _has_codebook, … "
        "itself).",
        "sglang keeps producer-written _ keys; a stale _is_tensorwise_scalar or _has_codebook "
        "can contradict the tensors.",
        '{"format": "int8_tensorwise", "_is_tensorwise_scalar": true} on a row-wise layer',
        "Drop the _ keys (safe: no runtime needs them in the file).",
        effects("degraded", "none"),
        Safety.SAFE,
        f"{SG_MARKER}: producer _ keys survive; effect inferred.",
    ),
    _r(
        "QC216",
        "marker-unknown-key",
        INFO,
        "marker key no runtime reads",
        "Marker keys are ones the format reads (format, full_precision_matrix_mult, convrot, "
        "convrot_groupsize, group_size, linear_dtype, params) or tolerated producer extras "
        "(orig_dtype, per_row, orig_shape, num_experts).",
        "Ignored keys are harmless but often a misspelling of a key that matters.",
        '{"format": "convrot_w4a4", "convrot_group_size": 64}',
        "Remove the key or correct its spelling.",
        effects("none", "none"),
        None,
        "ComfyUI and sglang read only named keys (ComfyUI @0271a469 comfy/ops.py "
        "_load_quantized_module; sglang 0.5.23 inspect_comfy_quant_markers and its config "
        "classes, read).",
    ),
    _r(
        "QC218",
        "convrot-not-boolean",
        E,
        "convrot is not a JSON boolean",
        "convrot is true or false.",
        "sglang's INT8 and W4A8 constructors compare convrot with `is True`: a JSON 1 or "
        '"yes" makes the layer fail ("must set convrot=true").',
        '{"format": "int8_tensorwise", "convrot": 1, "convrot_groupsize": 256}',
        "Write convrot as true (or false).",
        effects("fails", "none"),
        Safety.SAFE,
        f"sglang 0.5.23 ConvRotInt8Config and KitchenW4A8Config constructors ({SGQC}; case "
        "int8_convrot_flag_int, recorded).",
    ),
    _r(
        "QC219",
        "convrot-groupsize-invalid",
        E,
        "convrot_groupsize missing or not 16/64/256",
        "Rotated layers declare convrot_groupsize as the JSON integer 16, 64 or 256.",
        "sglang's ConvRot INT8 constructor requires the key and one of those values; ComfyUI "
        "requires a power of 4 and defaults to 256.",
        '{"format": "int8_tensorwise", "convrot": true}',
        "Add the group size the weights were rotated with (256 is ComfyUI's default).",
        effects("fails", "fails"),
        Safety.SAFE,
        f"sglang 0.5.23 ConvRotInt8Config constructor ({SGQC}; case "
        "int8_convrot_missing_groupsize, recorded); power-of-4 rule of comfy-kitchen 0.2.40 "
        "tensor/int8_utils.py _build_hadamard (run). ComfyUI converts a convrot_groupsize "
        f"written as a string with int() ({CUI_OPS} ~L1234; W4A4 ~L1244-1246, W4A8 "
        "~L1268-1270): not a failure there; a missing one defaults to 256 (QC320); "
        f"{CUI_RUN}; {CUI_DIFF}, case int8-convrot-group-string. sglang stage: the "
        "ConvRotInt8Config constructor for INT8; a W4A8 convrot_groupsize of 32 passes the "
        "inspector, the KitchenW4A8Config constructor, the layer build and the weight load "
        "and fails at the first forward, in comfy-kitchen 0.2.40's rotation (\"Regular "
        'Hadamard size must be a power of 4"; KitchenW4A8LinearMethod.apply -> '
        "w4a8_int8_linear; all three stages run by tests/rules/sglang/diff test_stages on "
        "CPU).",
    ),
    _r(
        "QC220",
        "group-size-invalid",
        E,
        "group_size is not a usable group length",
        "group_size is a positive JSON integer; for W4A8 >= 4 and dividing 16 or a multiple of 16.",
        "Both runtimes refuse or miscompute W4A8/AWQ layers with other group sizes. A size "
        'written as text ("16") is read by ComfyUI with int() and refused by sglang only.',
        '{"format": "asym_w4a8_int8", "group_size": 24}',
        "Requantize with a supported group size; write a text size as a JSON integer (safe).",
        effects("fails", "fails"),
        Safety.SAFE,
        "sglang 0.5.23 KitchenW4A8Config layer build (read) and case w4a8_group_size_24; "
        "comfy-kitchen 0.2.40 tensor/w4a8_int8.py quantize_w4a8_int8_weight (run); ComfyUI "
        f"int() of group_size ({CUI_OPS} ~L1262 asym_w4a8_int8, ~L1272 awq_w4a16; run: "
        "tests/rules/comfyui/diff case w4a8-group-string). sglang stage: layer build "
        "(KitchenW4A8Config.get_quant_method refuses group_size 24 for the layer; the "
        "inspector and the constructor only need >= 4; run by tests/rules/sglang/diff "
        "test_stages).",
    ),
    _r(
        "QC221",
        "marker-key-invalid",
        E,
        "marker key has a value the format does not accept",
        "Keys with a fixed set of values (linear_dtype: int4/int8) or a type "
        "(full_precision_matrix_mult: boolean) hold one of them.",
        "sglang's W4A4 constructor refuses other linear_dtype values; ComfyUI may misread them.",
        '{"format": "convrot_w4a4", "linear_dtype": "fp4"}',
        "Write a supported value.",
        effects("fails", "fails"),
        None,
        f"sglang 0.5.23 KitchenW4A4Config constructor ({SGQC}; read/recorded); ComfyUI effect "
        "inferred.",
    ),
    _r(
        "QC222",
        "header-layer-unmatched",
        E,
        "header marker names a layer that is not there",
        "Every _quantization_metadata layer name equals a tensor prefix.",
        'sglang matches names exactly: the real layer stays unmarked and it fails ("missing '
        'comfy_quant metadata"). ComfyUI re-attaches entries written without the model '
        "prefix (its second convert_old_quants pass); other mismatches leave the layer "
        "unmarked and ComfyUI silently loads it as 16-bit weights.",
        'layers: {"blocks.4.attn.wo": …} but the tensor is model.diffusion_model.blocks.4.attn.wo',
        "Rewrite the entry as a per-tensor marker keyed by the real prefix.",
        effects("fails", "degraded"),
        Safety.SAFE,
        f"{SG_MARKER} (case header_prefix_mismatch_nvfp4); ComfyUI PR #15085 and Forge "
        f"issue #1465. ComfyUI: {CUI_SD} (~L2284-2292) runs convert_old_quants, strips the "
        "model prefix found by unet_prefix_from_state_dict, then runs convert_old_quants "
        "again, so header entries written without the model.diffusion_model. prefix attach to "
        f"the prefixed tensors (no effect on ComfyUI); {CUI_RUN}. Entries with a prefix the "
        "tensors lack stay unmatched (degraded).",
    ),
    _r(
        "QC223",
        "marker-orphan",
        E,
        "marker for a layer without a weight",
        "Each marker's prefix has a <prefix>.weight tensor.",
        'sglang validates every marker and fails with "missing checkpoint tensors"; '
        "ComfyUI ignores it.",
        "blocks.0.mlp.fc1.comfy_quant with no blocks.0.mlp.fc1.weight",
        "Remove the stale marker.",
        effects("fails", "none"),
        Safety.SAFE,
        f"{SG_MARKER} (case orphan_marker); ComfyUI effect inferred.",
    ),
    _r(
        "QC225",
        "w4a8-convrot-missing",
        E,
        'W4A8 marker without "convrot": true',
        'asym_w4a8_int8 markers carry "convrot": true.',
        "ComfyUI's saver never writes the key and always rotates W4A8, but sglang's "
        'KitchenW4A8Config refuses the layer ("must set convrot=true").',
        '{"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 256}',
        'Add "convrot": true (safe: ComfyUI rotates regardless).',
        effects("fails", "none"),
        Safety.SAFE,
        f"sglang 0.5.23 KitchenW4A8Config constructor ({SGQC}; case w4a8_no_convrot_flag, "
        "recorded); ComfyUI @0271a469 comfy/ops.py _load_quantized_module (read).",
    ),
]
