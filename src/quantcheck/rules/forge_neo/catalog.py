"""QC701-QC709: Forge Neo's own rules (what its ports of ComfyUI's loader refuse or change)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects

FORGE = "Haoming02/sd-webui-forge-classic"
#: Where the rules come from (consumers.md §1.2 "Forge Neo"; read with the library tools).
QOPS = f"{FORGE} backend/quant_ops.py QUANT_ALGOS (bfd09a1: v0.16.4 port; 939c56d: v0.27.0 port)"
OPS = f"{FORGE} @1835c9c backend/operations_mixed_precision.py _load_quantized_module"
STATE = f"{FORGE} backend/state_dict.py convert_quantization (port of ComfyUI v0.19.0)"

RULES = [
    Rule(
        "QC701",
        "format-unsupported-by-forge-neo",
        Severity.ERROR,
        "format Forge Neo's QUANT_ALGOS does not have",
        effects(**{"forge-neo": "fails"}),
        Safety.UNSAFE,
        "Layers meant for Forge Neo use float8_e4m3fn, float8_e5m2, nvfp4, mxfp8 or "
        "int8_tensorwise: the formats in its backend/quant_ops.py QUANT_ALGOS.",
        "_load_quantized_module looks the marker's format up in QUANT_ALGOS before anything "
        "else, so convrot_w4a4, asym_w4a8_int8, w6a8_int8 and awq_w4a16 raise KeyError even "
        "though the ported ops file has branches for the first three. Likely, not certain: "
        "only the quant_ops of 939c56d and bfd09a1 were read, and copies of a Forge-Neo-style "
        "quant_ops.py elsewhere add convrot_w4a4.",
        '{"format": "convrot_w4a4", "convrot_groupsize": 256}',
        "Requantize the layers to a format Forge Neo loads (int8_tensorwise, float8_e4m3fn, "
        "nvfp4, mxfp8), or load the file in ComfyUI.",
        f"{QOPS}; {OPS} (QUANT_ALGOS[format] before the per-format branches). [GUESS]: no "
        "later quant_ops.py of the upstream repository was found; unattributed copies of a "
        "Forge-Neo-style quant_ops.py add convrot_w4a4.",
    ),
    Rule(
        "QC702",
        "format-needs-forge-neo-939c56d",
        Severity.INFO,
        "format Forge Neo loads only from 939c56d on",
        effects(**{"forge-neo": "none"}),
        None,
        "Layers use mxfp8 or int8_tensorwise, which Forge Neo's QUANT_ALGOS has only from "
        "939c56d (its port of ComfyUI v0.27.0) on.",
        "The bfd09a1 port (ComfyUI v0.16.4) knows FP8 and NVFP4 only: an older Forge Neo "
        "raises KeyError on these formats. Informational on the newest modelled release; the "
        "per-release effects say which releases fail.",
        '{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}',
        "Update Forge Neo to 939c56d or newer, or requantize to float8_e4m3fn / nvfp4.",
        f"{QOPS}; Forge Neo issues #1263 (int8 requested, 2026-06-29) and #1324 (int8 "
        "ConvRot files loading, 2026-07-17). [GUESS]: that the ops file at 939c56d already "
        "had the mxfp8 / int8 branches (read: the v0.16.4 port at 700441c without them, the "
        "v0.27.0 port at 1835c9c with them); if it did not, these formats load from 1835c9c.",
    ),
    Rule(
        "QC703",
        "header-replaces-marker-in-forge-neo",
        Severity.WARNING,
        "Forge Neo reads the header entry instead of the layer's marker tensor",
        effects(**{"forge-neo": "degraded"}),
        Safety.DISPLAY,
        "A layer with both a _quantization_metadata header entry and a comfy_quant tensor has "
        "every tensor-marker key in the header entry too.",
        "convert_quantization writes each header entry as the layer's comfy_quant tensor, "
        "replacing the tensor marker whole: keys only the tensor has (convrot, "
        "convrot_groupsize, group_size, full_precision_matrix_mult) are dropped without a "
        "message. A lost convrot computes rotated weights as plain ones (wrong output); a "
        "lost group size falls back to the default.",
        'header {"format": "int8_tensorwise"} + tensor {"format": "int8_tensorwise", '
        '"convrot": true, "convrot_groupsize": 16}',
        "Write the same complete marker in the header entry and the tensor, or drop the "
        "header entries.",
        f"{STATE} (header `layers` entries written as marker tensors, read at 4e6b147).",
    ),
]
