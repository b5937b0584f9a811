"""ComfyUI's own rules (QC605-QC610, QC650, QC651): the default loader's dtype table, and the
release that first loads each format (one rule per step of `runtimes/comfyui_releases.py`)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects
from quantcheck.rules.upstream import CUI_DIFF, CUI_OPS, CUI_QOPS, CUI_RUN, CUI_UTILS
from quantcheck.runtimes.comfyui_releases import GUESSED, LAYER_CODE, STEPS, before

E, INFO = Severity.ERROR, Severity.INFO
#: (code, release, formats, note, guessed) for each ComfyUI step after the oldest.
_STEPS = [(code, name, fmts, note, name in GUESSED) for name, code, fmts, note in STEPS if code]
#: The same for each step with a per-layer code (QC610: formats added after 0271a469).
_LAYER_STEPS = [
    (LAYER_CODE[name], name, fmts, note, name in GUESSED)
    for name, _, fmts, note in STEPS
    if name in LAYER_CODE
]

RULES = [
    Rule(
        "QC605",
        "dtype-stops-comfyui-default-loader",
        E,
        "F8_E8M0 tensor: ComfyUI's default (DynamicVRAM) loader cannot read the file",
        effects("none", "fails"),
        Safety.SAFE,
        "No tensor of the checkpoint is stored as F8_E8M0 (MXFP8 block scales are U8).",
        "With DynamicVRAM (the default on NVIDIA GPUs) ComfyUI parses the safetensors header "
        "itself and maps dtypes through a table without F8_E8M0: any such tensor, marked "
        "layer or not, raises KeyError before a layer is built. With --cpu or "
        "--disable-dynamic-vram safetensors.safe_open reads it (a marked MXFP8 layer then "
        "loads unchanged). The verdict describes the default GPU setup; the comfyui-cpu "
        "target describes --cpu.",
        "blocks.0.attn.qkv.weight_scale F8_E8M0 [128, 4]",
        "Relabel the bytes as U8 (the same E8M0 exponents: lossless).",
        f"{CUI_UTILS} (its _TYPES dtype table, ~L133) and main.py / cli_args.py "
        f"enables_dynamic_vram; {CUI_RUN}. With safe_open (--cpu, target comfyui-cpu) an "
        "F8_E8M0 MXFP8 scale loads unchanged: _load_quantized_module views it as "
        f"float8_e8m0fnu ({CUI_OPS} ~L1214; {CUI_DIFF}, case mxfp8-scales-f8-e8m0).",
    ),
    *(
        Rule(
            code,
            f"format-needs-comfyui-{release}",
            # an error, as the loader stops on those releases (exit 1 for such a target);
            # a note where a per-layer code (QC610) reports each layer as the error
            INFO if release in LAYER_CODE else E,
            f"format ComfyUI loads only from {release} on",
            effects("none", "none"),
            None,
            f"Layers use formats ComfyUI releases before {release} do not know "
            f"({', '.join(formats)}).",
            "ComfyUI's QUANT_ALGOS table grew release by release; an older ComfyUI stops with "
            'KeyError / "Unsupported quantization format" on a format it does not know. The '
            "newest modelled release loads it, so the finding shows only with --target "
            f"comfyui@RELEASE (a release before {release}) or comfyui@all; the per-release "
            "effects (release data) say which releases fail."
            + (
                f" A summary note: {LAYER_CODE[release]} reports each such layer as the error."
                if release in LAYER_CODE
                else ""
            )
            + (
                " [GUESS]: this step's ComfyUI code was not read; the model follows Forge "
                "Neo's port and third-party probes."
                if guess
                else ""
            ),
            f'{{"format": "{formats[0]}"}}',
            f"Use ComfyUI {release} or newer, or requantize the layers to a format the older "
            "release loads (float8_e4m3fn, nvfp4).",
            f"{CUI_QOPS} QUANT_ALGOS and its history: {note}"
            + (" [GUESS]" if guess and "[GUESS]" not in note else ""),
        )
        for code, release, formats, note, guess in _STEPS
    ),
    *(
        Rule(
            code,
            "format-unsupported-by-comfyui",
            E,
            f"format ComfyUI up to {before(release)} does not load",
            effects("none", "none"),
            Safety.SAFE,
            f"Layers meant for ComfyUI up to {before(release)} use a format in its QUANT_ALGOS "
            f"({', '.join(formats)} arrived with {release}" + (" [GUESS]" if guess else "") + ").",
            "ComfyUI up to "
            + before(release)
            + " looks the format up in QUANT_ALGOS and stops (KeyError / "
            '"Unsupported quantization format"); the release that added it loads the '
            "file. The effect per release is release data (runtimes/comfyui_releases.py): "
            f"fails up to {before(release)}, none from {release} on, so the finding shows only "
            f"with --target comfyui@{before(release)} (or older, or comfyui@all).",
            f'{{"format": "{formats[0]}", "group_size": 32}}',
            "Relabel the layer to the format the same tensors load as (w6a8_int8 -> "
            f"asym_w4a8_int8: ComfyUI {before(release)} reads its 6-bit layout from the row "
            f"width), or update ComfyUI to {release} or newer.",
            f"ComfyUI @{before(release)} comfy/quant_ops.py QUANT_ALGOS (read), looked up in "
            f"comfy/ops.py _load_quantized_module ~L1206 (KeyError; {CUI_DIFF}, case "
            f"w6a8-after-0271a469); {note}"
            + (" [GUESS]" if guess and "[GUESS]" not in note else ""),
        )
        for code, release, formats, note, guess in _LAYER_STEPS
    ),
]
