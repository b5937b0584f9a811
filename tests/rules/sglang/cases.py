"""Rule cases for sglang's loaders (QC631-QC638, `rules/sglang/loaders.py`)."""

from __future__ import annotations

from .._build import P, file, fp8, header_meta, int8, nvfp4, rowwise, w4a8
from .._case import RuleCase, eff

FC1 = "blocks.0.mlp.fc1"
FP8_HEADER = file(fp8, header_meta({P: {"format": "float8_e4m3fn"}}))
#: what a marked file still gets from the other loaders (each names its own)
LOADER_NOTES = ("QC616", "QC631", "QC633", "QC635", "QC636", "QC637")

CASES = [
    RuleCase(
        "QC631",
        "int8-markers-only",
        file(int8),
        eff("fails", "none"),
        twin=FP8_HEADER,
        twin_allows=("QC616", "QC635", "QC637"),
        message="no supported native quantization declaration",
    ),
    RuleCase(
        "QC632",
        "header-not-json",
        file(fp8, {"_quantization_metadata": "{not json"}),
        eff("fails", "none"),
        twin=FP8_HEADER,
        twin_allows=("QC616", "QC635", "QC637", "QC618"),
        message="Invalid _quantization_metadata",
    ),
    RuleCase(
        "QC633",
        "nvfp4-beside-fp8-markers",
        file(lambda: [*nvfp4(), *fp8(FC1)]),
        eff("degraded", "none"),
        twin=file(nvfp4),
        twin_allows=LOADER_NOTES,
        message="built unquantized",
    ),
    RuleCase(
        "QC634",
        "nvfp4-beside-w4a8",
        file(lambda: [*nvfp4(), *w4a8(FC1)]),
        eff("fails", "none"),
        twin=file(nvfp4),
        twin_allows=LOADER_NOTES,
        message="packed layer",
    ),
    RuleCase(
        "QC635",
        "int8-convrot-comfyui-mode",
        file(int8),
        eff("degraded", "none"),
        twin=file(nvfp4),
        twin_allows=LOADER_NOTES,
        message="cast to the parameter dtype",
    ),
    RuleCase(
        "QC636",
        "nvfp4-comfyui-mode",
        file(nvfp4),
        eff("fails", "none"),
        twin=file(int8),
        twin_allows=LOADER_NOTES,
        message="do not fit their [N, K] parameter",
    ),
    RuleCase(
        "QC637",
        "fp8-minimax-h3-integrated",
        file(fp8),
        eff("fails", "none"),
        twin=file(int8),
        twin_allows=LOADER_NOTES,
        message="ComfyUI H3 integrated mode",
    ),
    RuleCase(
        "QC638",
        "rowwise-read-as-markers",
        rowwise(),
        eff("fails", "none"),
        twin=FP8_HEADER,
        twin_allows=LOADER_NOTES,
        message="Unsupported Comfy quantization format(s)",
    ),
]
