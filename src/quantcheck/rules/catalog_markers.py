"""QC2xx: comfy_quant marker tensors and `_quantization_metadata` header markers."""

from __future__ import annotations

from quantcheck.diagnostics import Safety, Severity
from quantcheck.rules.registry import Rule, effects

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
SG_MARKER = "sglang 0.5.23 inspect_comfy_quant_markers (sglang-messages.md §2.1, recorded)"
CUI_MARKER = ("ComfyUI reads markers with json.loads(tensor.numpy().tobytes()) "
              "(comfy/ops.py, comfy-formats.md §1.1, read)")


def _r(code: str, name: str, sev: Severity, title: str, checks: str, why: str, example: str,
       remedy: str, eff: dict, fix: Safety | None, evidence: str) -> Rule:
    return Rule(code, name, sev, title, eff, fix, checks, why, example, remedy, evidence)


RULES = [
    _r("QC201", "marker-invalid-json", E, "marker bytes are not a JSON document",
       "Each `<layer>.comfy_quant` tensor's bytes decode (as both runtimes do, json.loads on the "
       "raw bytes) to JSON.",
       "sglang stops the whole load with \"Invalid Comfy quantization marker\"; ComfyUI raises "
       "while building the layer.",
       "bytes 7b 22 66 6f 72 6d 61 74 22 3a 20 00 00 ('{\"format\": ' + NUL padding)",
       "Rewrite the marker from the layer's tensors (`quantcheck fix` adds markers where the "
       "format is unambiguous) or re-export.",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} message #7; {CUI_MARKER}; ComfyUI effect inferred."),
    _r("QC202", "marker-not-object", E, "marker JSON is not an object",
       "The decoded marker is a JSON object such as {\"format\": \"nvfp4\"}.",
       "sglang: \"Comfy quantization marker … must contain a JSON object\"; ComfyUI calls "
       ".get on it and fails.",
       '["nvfp4"] or "nvfp4"',
       "Write the marker as an object: {\"format\": \"nvfp4\"}.",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} message #8 (case marker_json_array); ComfyUI effect inferred."),
    _r("QC203", "marker-all-zero", E, "marker bytes are all zero",
       "The marker tensor holds text, not zero bytes.",
       "Zeroed markers come from broken exporters (42 of 200 markers in one official ComfyUI "
       "file); every runtime refuses them.",
       "tensor blocks.3.attn.to_q.comfy_quant = 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
       "Recreate the marker from the layer's tensors with `quantcheck fix`.",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} message #7 (case marker_zero_bytes); ComfyUI #15567."),
    _r("QC204", "marker-dtype-unreadable", E, "marker stored in a dtype numpy cannot read",
       "Marker tensors are U8 (any 8/16/32/64-bit integer or IEEE float dtype still yields its "
       "raw bytes; BF16, FP8, F4 and F6 do not).",
       "sglang raises TypeError \"Got unsupported ScalarType BFloat16\"; ComfyUI converts with "
       ".numpy() the same way.",
       "blocks.0.attn.qkv.comfy_quant: BF16 [10]",
       "Store the marker bytes as U8 (`quantcheck fix` relabels the same bytes).",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} §2.2 (case marker_bf16_tensor); ComfyUI effect inferred from the same call."),
    _r("QC205", "marker-dtype-not-u8", W, "marker stored in a dtype other than U8",
       "Marker tensors are U8 [len(bytes)].",
       "Both runtimes read the raw bytes and accept it, but other tools decode values, not "
       "bytes.",
       "blocks.0.attn.qkv.comfy_quant: I8 [20]",
       "Relabel the tensor as U8; the bytes stay the same.",
       effects("none", "none"), Safety.SAFE,
       f"{SG_MARKER} §2.2: integer and IEEE float dtypes yield raw bytes (case "
       "msg_marker_i8_dtype)."),
    _r("QC206", "marker-too-large", W, "marker tensor over 64 KiB",
       "A marker is small JSON (under 200 bytes in practice); quantcheck reads at most 64 KiB.",
       "A huge marker is a corrupt or hostile file; the layer's format cannot be trusted.",
       "blocks.0.attn.qkv.comfy_quant: U8 [10000000]",
       "Recreate the marker with `quantcheck fix`.",
       effects("none", "none"), None,
       "quantcheck's own limit; both runtimes would read any size (read)."),
    _r("QC207", "marker-encoding-nonstandard", W, "marker text has a BOM or is UTF-16/32",
       "Marker bytes are plain UTF-8 JSON as ComfyUI writes them.",
       "json.loads accepts BOMs and UTF-16/32, so both runtimes load it, but tools that decode "
       "UTF-8 do not.",
       "bytes ef bb bf 7b 22 66 6f ... (UTF-8 BOM)",
       "Rewrite the marker as UTF-8 without BOM.",
       effects("none", "none"), Safety.SAFE,
       f"{SG_MARKER} §4 (cases msg_marker_utf8_bom, msg_marker_utf16_bom)."),
    _r("QC208", "quantization-metadata-invalid", E,
       "__metadata__._quantization_metadata is not {\"layers\": {...}}",
       "The header's _quantization_metadata string is JSON of the form "
       "{\"format_version\": \"1.0\", \"layers\": {\"<layer>\": {marker}}}.",
       "sglang stops the load (\"Invalid _quantization_metadata\", \"must contain a layers "
       "object\"); ComfyUI's convert_old_quants parses the same string.",
       '__metadata__: {"_quantization_metadata": "{\\"quant_algo\\": \\"NVFP4\\"}"}',
       "Drop the header entry and keep per-tensor markers (`quantcheck fix`).",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} messages #1–#3 (case quantization_metadata_invalid_json); ComfyUI "
       "effect inferred (comfy/utils.py convert_old_quants, read)."),
    _r("QC209", "header-marker-not-object", E, "a _quantization_metadata layer entry is not an object",
       "Each value of _quantization_metadata.layers is a marker object.",
       "sglang: \"Comfy quantization metadata for … must be an object\".",
       '"layers": {"blocks.0.attn.qkv": "nvfp4"}',
       "Write the entry as {\"format\": \"nvfp4\"}.",
       effects("fails", "fails"), Safety.SAFE,
       f"{SG_MARKER} message #4; ComfyUI effect inferred."),
    _r("QC210", "marker-conflict", E, "two marker sources disagree on a field",
       "For one layer, the header entry, the marker tensor and other shards agree on every "
       "field they both set.",
       "sglang stops with \"Conflicting Comfy quantization markers\"; ComfyUI lets the header "
       "overwrite the tensor marker, so the two runtimes compute different things.",
       'header: {"format": "nvfp4"}, tensor: {"format": "float8_e4m3fn"}',
       "Keep the marker that matches the tensors as one per-tensor marker (`quantcheck fix` "
       "rewrites header entries as tensor markers).",
       effects("fails", "degraded"), Safety.SAFE,
       f"{SG_MARKER} message #5 (cases conflicting_markers_two_shards, msg_merge_nan_conflict); "
       "ComfyUI overwrite read in comfy/utils.py convert_old_quants."),
    _r("QC211", "marker-loose-equality", W, "two marker sources agree only loosely (true vs 1)",
       "Fields set in several sources have the same JSON type as well as value.",
       "sglang's merge treats true == 1 and 16 == 16.0 as equal and keeps the later one; its "
       "INT8 and W4A8 constructors then require `convrot` to be exactly true.",
       'header: {"convrot": true}, tensor: {"convrot": 1}',
       "Write the same JSON value in every source.",
       effects("none", "none"), Safety.SAFE,
       f"{SG_MARKER} §5.1 (case msg_merge_true_then_1)."),
]
