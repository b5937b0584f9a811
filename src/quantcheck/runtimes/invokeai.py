"""InvokeAI 6.14.2 as a target: what its ComfyUI single-file loaders do with these files.

InvokeAI reads no marker (neither tensors nor the header): it multiplies every weight_scale /
scale_weight into its weight and drops the scales and markers (`rules/invokeai/checks.py`).
So marker findings change nothing for it; container and shard findings stop it like any
safetensors reader; numeric findings on scales reach the weights it computes with.

Standard library only (the check path imports it); codes are strings because the rule
registry imports the runtimes.
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED = Effect.FAILS, Effect.DEGRADED
#: What each existing generic code does to InvokeAI (codes not listed: `LEFT_NONE`).
EFFECTS: dict[str, Effect] = {
    # container: safetensors.torch.load_file refuses what sglang's reader refuses
    **dict.fromkeys(
        [f"QC1{n:02d}" for n in (1, 2, 3, 4, 5, 6, *range(8, 19), 20, 21)],
        FAILS,
    ),
    "QC107": DEGRADED,  # a duplicate key: one of the two values wins
    # a missing scale: the weight loads as raw codes; a 16-bit weight beside a scale has the
    # scale multiplied in again
    "QC301": DEGRADED,
    "QC304": DEGRADED,
    # the weight's dtype contradicts its marker: InvokeAI follows the dtype, so it computes
    # with the marker's weight only if the dtype label is the right one of the two
    "QC303": DEGRADED,
    # values InvokeAI multiplies into the weights it computes with
    **dict.fromkeys(["QC401", "QC402", "QC403", "QC407", "QC408"], DEGRADED),
    # shards: an incomplete or broken set cannot be loaded
    "QC501": DEGRADED,
    **dict.fromkeys(["QC502", "QC503", "QC504", "QC506"], FAILS),
    # the model family's contract (QC86x, issue 26)
    "QC861": DEGRADED,
    "QC862": FAILS,
}
#: Why each code of EFFECTS does what it does to InvokeAI (one line each).
WHY: dict[str, str] = {
    **dict.fromkeys(
        [f"QC1{n:02d}" for n in (1, 2, 3, 4, 5, 6, *range(8, 19), 20, 21)],
        "safetensors.torch.load_file refuses what sglang's reader refuses",
    ),
    "QC107": "a duplicate key: one of the two values wins",
    "QC301": "a missing scale: the weight loads as raw codes",
    "QC304": "a 16-bit weight beside a scale has the scale multiplied in again",
    "QC303": "InvokeAI follows the dtype, so it computes with the marker's weight only if the "
    "dtype label is the right one of the two",
    **dict.fromkeys(
        ["QC401", "QC402", "QC403", "QC407", "QC408"],
        "values InvokeAI multiplies into the weights it computes with",
    ),
    "QC501": "the shards are merged into one dict: one copy wins silently",
    **dict.fromkeys(
        ["QC502", "QC503", "QC504", "QC506"],
        "an incomplete or broken shard set cannot be loaded: its tensors are missing",
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
}
#: Existing codes consciously without effect on InvokeAI, and why.
LEFT_NONE: dict[str, str] = {
    **dict.fromkeys(
        ["QC800", "QC801", "QC802", "QC803"],
        "a GPU report about comfy-kitchen's kernels (check --gpu), which InvokeAI never runs:"
        " it dequantizes every layer when it loads (its --gpu entry)",
    ),
    **dict.fromkeys(
        [*(f"QC83{n}" for n in range(8)), "QC840"],
        "a LoRA on a quantized base as ComfyUI loads it (quantcheck lora); this runtime's "
        "own LoRA path is runtimes/invokeai_lora.py, judged by QC838/QC839",
    ),
    **dict.fromkeys(
        ["QC838", "QC839"],
        "no effect by default: a QC838 finding names this runtime in its own effects when "
        "this runtime's LoRA merge loses the LoRA; QC839 is a note",
    ),
    **dict.fromkeys(["QC119", "QC122"], "layout notes safetensors accepts"),
    **dict.fromkeys(
        [
            "QC201",
            "QC202",
            "QC203",
            "QC204",
            "QC205",
            "QC206",
            "QC207",
            "QC208",
            "QC209",
            "QC210",
            "QC211",
            "QC212",
            "QC213",
            "QC214",
            "QC215",
            "QC216",
            "QC218",
            "QC219",
            "QC220",
            "QC221",
            "QC222",
            "QC223",
            "QC225",
        ],
        "InvokeAI reads no marker: it drops comfy_quant tensors and ignores the header",
    ),
    **dict.fromkeys(
        ["QC302", "QC307", "QC308", "QC311", "QC312", "QC318", "QC321"],
        "InvokeAI's own rules (QC721-QC724) judge what its multiply makes of the tensors",
    ),
    **dict.fromkeys(
        ["QC305", "QC306", "QC313", "QC316", "QC319", "QC320"],
        "the marker's claims do not matter: the stored tensors are multiplied as they are",
    ),
    "QC314": "an unmarked scaled weight is dequantized like any other (and an unscaled F8 "
    "weight is cast)",
    "QC315": "InvokeAI's shared helper dequantizes legacy scale_weight files (QC725: the "
    "loaders that drop it)",
    **dict.fromkeys(
        ["QC404", "QC405", "QC406", "QC409"],
        "block-scale and codebook formats fail or compute garbage anyway (QC722, QC723)",
    ),
    "QC505": "the weight_map is not used by InvokeAI's single-file loaders",
    **dict.fromkeys(
        [f"QC6{n:02d}" for n in (*range(1, 25), *range(30, 39), 50, 51)],
        "sglang's and ComfyUI's own loaders (InvokeAI reads F8_E8M0 through safetensors)",
    ),
    "QC860": ("ComfyUI's model detection; InvokeAI's own model detection was not read"),
    "QC863": (
        "modules outside the family's layout: InvokeAI's handling of unexpected keys was not read"
    ),
    "QC864": "information: the quantization topology",
}
OWN_CODES = ("QC720", "QC721", "QC722", "QC723", "QC724", "QC725")
RELEASES = (
    Release(
        "6.14.2",
        note="PyPI wheel invokeai==6.14.2: model_loaders/comfyui_state_dict_utils.py "
        "(_dequantize_comfyui_fp8, _strip_quantization_metadata), used by qwen_image.py and "
        "wan.py; flux.py and z_image.py carry copies.",
    ),
)


def invokeai_runtime() -> Runtime:
    """The InvokeAI runtime record."""
    return Runtime(
        "invokeai",
        "InvokeAI",
        RELEASES,
        checks="quantcheck.rules.invokeai.checks:InvokeaiChecks",
        gpu="quantcheck.rules.invokeai.gpu:INVOKEAI_GPU",
        effects=EFFECTS,
        reasons={**WHY, **LEFT_NONE},
        messages="quantcheck.rules.invokeai.messages:PATTERNS",
        folder="quantcheck.rules.invokeai",
        default_target=False,
        doc="InvokeAI's ComfyUI single-file loaders (comfyui_state_dict_utils.py "
        "_dequantize_comfyui_fp8: every weight_scale multiplied in, markers dropped), read in "
        "and run from the PyPI wheel 6.14.2.",
    )
