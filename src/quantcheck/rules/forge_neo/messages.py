"""Forge Neo's own messages (backend/operations_mixed_precision.py `_load_quantized_module`,
backend/utils.py `load_torch_file`), so `quantcheck explain` recognises them. Several are
ComfyUI's messages too: Forge Neo ports its ops.py."""

from __future__ import annotations

from quantcheck.explain.messages import pattern
from quantcheck.rules import codes as R
from quantcheck.runtimes.forge_neo import NAME, RELEASES, TITLE

LABEL = f"{TITLE} {RELEASES[-1].name}"
_SAME = "(ComfyUI's ported ops.py raises the same message)"

PATTERNS = [
    pattern(
        "Unknown quantization format for layer {prefix}",
        R.QC212,
        "the marker has no format key " + _SAME,
        "a producer wrote the format under another key (quant_format, dtype)",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Missing MXFP8 block scales for layer {prefix}",
        R.QC301,
        "an MXFP8 layer saved without its U8 weight_scale",
        "the scales were saved under another name",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Missing NVFP4 scales for layer {prefix}",
        R.QC301,
        "weight_scale or weight_scale_2 of an NVFP4 layer is missing " + _SAME,
        "a shard holding the scales was not loaded",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Missing INT8 weight scale for layer {prefix}",
        R.QC301,
        "an int8_tensorwise layer saved without weight_scale " + _SAME,
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Missing ConvRot W4A4 weight scale for layer {prefix}",
        R.QC301,
        "a convrot_w4a4 layer saved without weight_scale (reached only if a newer "
        "quant_ops.py has convrot_w4a4)",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        'Invalid Layer "{prefix}" ([{format}] packed weight width {cols} does not match '
        "K={K} at {bits} bits)",
        R.QC321,
        "a 4-bit weight marked w6a8_int8, or a 6-bit one marked asym_w4a8_int8",
        "the model's linear is wider than the file's layer (a different model)",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        "Missing {format} group scale (weight_s_rel) for layer {prefix}",
        R.QC301,
        "a W4A8 / W6A8 layer saved without weight_s_rel",
        runtime=LABEL,
        target=NAME,
    ),
    pattern(
        'Model "{path}" is corrupt or invalid...',
        R.QC117,
        "an interrupted download (the data section is shorter than the header says)",
        "a header safetensors cannot parse (see `quantcheck check` for the exact QC1xx finding)",
        runtime=LABEL,
        target=NAME,
    ),
    # a bare `KeyError: 'fmt'` reads the same from ComfyUI: its patterns (messages.py)
    # name Forge Neo as a cause
]
