"""QC1xx: the safetensors container itself (header, dtypes, shapes, offsets, data section)."""

from __future__ import annotations

from quantcheck.rules.levels import Effect, Safety, Severity
from quantcheck.rules.rule import Rule, effects

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
BOTH_FAIL = effects("fails", "fails")
READER = (
    "safetensors 0.8.0 safe_open refuses such files when they are opened (header validation in "
    "safetensors/src/tensor.rs; recorded through sglang 0.5.23's inspect_comfy_quant_markers); "
    "ComfyUI @09708eae comfy/utils.py load_safetensors opens files through safetensors or its "
    "own reader of the same format (read)."
)


def _r(code: str, name: str, sev: Severity, title: str, checks: str, why: str, example: str,
       remedy: str, eff: dict[str, Effect] | None = None, fix: Safety | None = None,
       evidence: str = READER, *, action: str | None = None, repair: str = "") -> Rule:
    return Rule(code, name, sev, title, eff or BOTH_FAIL, fix, checks, why, example, remedy,
                evidence, action=action, repair=repair)


RULES = [
    _r("QC101", "file-too-small", E, "file shorter than the 8-byte header length",
       "The file holds at least the 8-byte little-endian header length.",
       "Without it nothing can be read; every loader refuses the file.",
       "a 0-byte file left by an interrupted download",
       "Download or export the file again.", repair="refuse"),
    _r("QC102", "header-too-large", E, "declared header length over 100,000,000 bytes",
       "The declared header length is at most 100,000,000 bytes, the safetensors limit.",
       "Larger values come from corrupt or non-safetensors files; readers refuse them.",
       "first 8 bytes ff ff ff ff ff ff ff 7f (2^63 - 1)",
       "The file is not a safetensors checkpoint or is corrupt; obtain a good copy.",
       repair="refuse"),
    _r("QC103", "header-past-eof", E, "header extends past the end of the file",
       "8 + header length is not larger than the file.",
       "A truncated file: the header (and so every tensor) cannot be read.",
       "a 19 GiB checkpoint cut at 4 KiB during download",
       "Download the file again; compare its size with the source.", repair="refuse"),
    _r("QC104", "header-not-utf8", E, "header is not valid UTF-8",
       "The header bytes decode as UTF-8.",
       "safetensors refuses non-UTF-8 headers.",
       'a tensor name written in Latin-1: "caf\\xe9.weight"',
       "Re-save the checkpoint with a safetensors writer.", repair="refuse"),
    _r("QC105", "header-not-json", E, "header is not valid JSON",
       "The header text is one JSON value with nothing but whitespace after it.",
       "Invalid JSON (a BOM, NUL padding, a truncated header) makes every loader refuse the file.",
       '{"a.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}\\x00\\x00',
       "Re-save the checkpoint with a safetensors writer.", repair="refuse"),
    _r("QC106", "header-not-object", E, "header JSON is not an object",
       "The header's top-level JSON value is an object mapping tensor names to entries.",
       "Any other value (array, string, number) is not a safetensors header.",
       '["a.weight"]',
       "Re-save the checkpoint with a safetensors writer.", repair="refuse"),
    _r("QC107", "duplicate-key", E, "the same key appears twice in one JSON object",
       "No JSON object in the header (top level or a tensor entry) repeats a key.",
       "JSON parsers keep the last copy silently, so two tools can read different tensors.",
       '{"a.weight": {...}, "a.weight": {...}}',
       "Re-save the checkpoint with a safetensors writer, keeping the intended tensor.",
       eff=effects("degraded", "degraded"),
       evidence="safetensors 0.8.0 keeps the last copy of a repeated tensor name without "
                "error (safetensors/src/tensor.rs, recorded) but refuses a repeated field inside "
                "an entry or __metadata__; Python's json.loads keeps the last (read). Effect "
                "inferred.", repair="refuse"),
    _r("QC108", "metadata-not-string-map", E, "__metadata__ is not a string-to-string map",
       "__metadata__, when present, is an object whose values are all strings.",
       "safetensors refuses non-string metadata values when it opens the file.",
       '"__metadata__": {"format": "pt", "step": 1000}',
       "Store metadata values as strings (json.dumps nested values)."),
    _r("QC109", "unknown-dtype", E, "tensor dtype is not a safetensors dtype",
       "Every tensor's dtype is one of safetensors' names: BOOL, U8, I8, F8_E5M2, F8_E4M3, "
       "F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, F4, F6_E2M3, F6_E3M2, I16, U16, F16, BF16, I32, U32, "
       "F32, C64, F64, I64, U64.",
       "An unknown dtype makes safetensors refuse the whole file.",
       '"dtype": "FP8"',
       "Write the tensor with a supported dtype name.", repair="refuse"),
    _r("QC110", "bad-shape", E, "shape is not a list of non-negative integers",
       "Every tensor's shape is a JSON list of non-negative integers.",
       "Readers cannot size the tensor.",
       '"shape": [3072, -1] or "shape": [3072.0]',
       "Re-save the tensor with its real shape.", repair="refuse"),
    _r("QC111", "bad-offsets", E, "data_offsets is not [begin, end] with begin <= end",
       "Every tensor's data_offsets is a list of two non-negative integers, begin <= end.",
       "Readers cannot locate the tensor's bytes.",
       '"data_offsets": [100, 50]',
       "Re-save the checkpoint with a safetensors writer.", repair="refuse"),
    _r("QC112", "size-overflow", E, "element count × dtype size overflows 64 bits",
       "The tensor's byte size (product of the shape times the dtype width) fits in 64 bits.",
       "Such shapes are lies; readers that multiply in 64 bits overflow or refuse.",
       '"shape": [1099511627776, 1099511627776], "dtype": "F32"',
       "The header is corrupt; re-export the checkpoint.", repair="refuse"),
    _r("QC113", "size-not-whole-bytes", E, "tensor size is not a whole number of bytes",
       "For sub-byte dtypes (F4, F6_*) the element count times the bit width is a multiple of 8.",
       "A tensor must occupy whole bytes; safetensors refuses the file.",
       '"dtype": "F4", "shape": [3]  (12 bits)',
       "Pad the packed tensor to whole bytes before saving.", repair="refuse"),
    _r("QC114", "size-mismatch", E, "data_offsets span differs from dtype × shape",
       "end - begin equals the tensor's byte size from dtype and shape.",
       "A lying header: a reader would read the wrong bytes or refuse the file.",
       '"dtype": "F32", "shape": [4], "data_offsets": [0, 8]  (needs 16 bytes)',
       "The header is corrupt; re-export the checkpoint.", repair="refuse"),
    _r("QC115", "offsets-gap", E, "unused bytes between two tensors",
       "The tensors' byte ranges, sorted by offset, follow each other without gaps.",
       "safetensors refuses files whose data section is not exactly covered.",
       "a.weight [0, 16], b.weight [32, 48]",
       "Re-save with `quantcheck fix` or a safetensors writer.", fix=Safety.SAFE,
       repair="rewrite"),
    _r("QC116", "offsets-overlap", E, "two tensors share bytes",
       "No two tensors' byte ranges overlap.",
       "Overlapping tensors alias each other; safetensors refuses the file.",
       "a.weight [0, 16], b.weight [8, 24]",
       "Re-save with `quantcheck fix` or a safetensors writer.", fix=Safety.SAFE,
       repair="rewrite"),
    _r("QC117", "data-truncated", E, "data section shorter than the header declares",
       "The file holds every byte the header's data_offsets point to.",
       "A truncated download; tensors at the end cannot be read.",
       "header declares 19.2 GB of tensor data, the file holds 12.0 GB",
       "Download the file again; compare its size with the source.", repair="refuse"),
    _r("QC118", "data-trailing", E, "bytes after the last tensor",
       "The data section ends exactly where the last tensor ends.",
       "safetensors refuses files with uncovered bytes (\"file not fully covered\").",
       "a file with 4 KiB appended after the last tensor",
       "Re-save with `quantcheck fix` or a safetensors writer.", fix=Safety.SAFE,
       repair="rewrite"),
    _r("QC119", "packed-rows-misaligned", W, "sub-byte tensor rows do not end on byte boundaries",
       "For F4/F6 tensors, the last dimension times the bit width is a multiple of 8.",
       "Row slices of such tensors start in the middle of a byte; loaders that slice rows "
       "(sharded or lazy loading) fail or misread them.",
       '"dtype": "F4", "shape": [2, 3]',
       "Pad rows to whole bytes, or store packed codes as U8.",
       eff=effects("none", "none"),
       evidence="safetensors slices sub-byte tensors only on byte boundaries (read); inferred."),
    _r("QC120", "json-too-deep", E, "header JSON nested too deeply to parse",
       "The header JSON nests at most a few hundred levels (a real header nests 3).",
       "Deep nesting is a hostile input: parsers recurse and run out of stack.",
       "[[[[[[...]]]]]] 100000 levels",
       "The file is not a valid checkpoint; do not load it.", repair="refuse"),
    _r("QC121", "tensor-entry-malformed", E, "tensor entry lacks dtype, shape or data_offsets",
       "Every tensor entry is an object with exactly dtype, shape and data_offsets (unexpected "
       "extra fields are reported as a warning).",
       "Readers refuse entries with missing fields; they ignore extra ones, which usually mean "
       "a writer bug.",
       '"a.weight": {"dtype": "F32", "shape": [4]}',
       "Re-save the checkpoint with a safetensors writer.", repair="refuse"),
    _r("QC122", "header-unaligned", INFO, "header length is not a multiple of 8",
       "The header length is a multiple of 8, as safetensors writers pad it.",
       "Tensor data then starts unaligned; zero-copy loaders may copy or refuse.",
       "header length 1001",
       "Re-save with `quantcheck fix` or a safetensors writer (pads the header with spaces).",
       eff=effects("none", "none"), fix=Safety.SAFE,
       evidence="safetensors' writer pads to 8 bytes (read); no runtime refuses (inferred).",
       repair="rewrite"),
]
