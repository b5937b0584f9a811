"""DiffSynth-Studio 2.1.12 as a target: its comfy-kitchen backend for pre-quantized files.

DiffSynth-Studio reads only comfy_quant marker TENSORS (the header is passed in and ignored),
loads float8_e4m3fn and int8_tensorwise, and loads the state dict strictly
(`rules/diffsynth/checks.py`). Standard library only (the check path imports it).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

FAILS, DEGRADED = Effect.FAILS, Effect.DEGRADED
#: What each existing generic code does to DiffSynth-Studio (codes not listed: `LEFT_NONE`).
EFFECTS: dict[str, Effect] = {
    # container: safetensors.safe_open refuses what sglang's reader refuses
    **dict.fromkeys(
        [f"QC1{n:02d}" for n in (1, 2, 3, 4, 5, 6, *range(8, 19), 20, 21)],
        FAILS,
    ),
    "QC107": DEGRADED,
    # marker tensors _parse_marker cannot decode: "`X.comfy_quant` is not valid JSON"; a JSON
    # value that is not an object stops it with AttributeError
    **dict.fromkeys(["QC201", "QC202", "QC203", "QC204"], FAILS),
    # the weight is wrapped as the marker says whatever it holds (comfy-kitchen computes
    # with it); a scale of another shape is used as it is
    **dict.fromkeys(["QC303", "QC304", "QC306", "QC307"], DEGRADED),
    # unmarked quantized weights: weight_scale is an unexpected key of the strict load
    "QC314": FAILS,
    "QC315": FAILS,
    # no convrot_groupsize: DiffSynth rotates with 256 like ComfyUI
    "QC320": DEGRADED,
    **dict.fromkeys(["QC401", "QC402", "QC403", "QC407", "QC408"], DEGRADED),
    "QC501": DEGRADED,
    **dict.fromkeys(["QC502", "QC503", "QC504", "QC506"], FAILS),
    # the model family's contract (QC86x, issue 26)
    "QC861": DEGRADED,
    "QC862": FAILS,
}
#: Why each code of EFFECTS does what it does to DiffSynth-Studio (one line each).
WHY: dict[str, str] = {
    **dict.fromkeys(
        [f"QC1{n:02d}" for n in (1, 2, 3, 4, 5, 6, *range(8, 19), 20, 21)],
        "safetensors.safe_open refuses what sglang's reader refuses",
    ),
    "QC107": "a duplicate key: one of the two values wins",
    **dict.fromkeys(
        ["QC201", "QC202", "QC203", "QC204"],
        "_parse_marker cannot decode the marker tensor ('is not valid JSON'); a JSON value "
        "that is not an object stops it with AttributeError",
    ),
    **dict.fromkeys(
        ["QC303", "QC304", "QC306", "QC307"],
        "the weight is wrapped as the marker says whatever it holds (comfy-kitchen computes "
        "with it); a scale of another shape is used as it is",
    ),
    **dict.fromkeys(
        ["QC314", "QC315"], "weight_scale is an unexpected key of the strict load_state_dict"
    ),
    "QC320": "no convrot_groupsize: DiffSynth rotates with 256 like ComfyUI",
    **dict.fromkeys(
        ["QC401", "QC402", "QC403", "QC407", "QC408"], "the stored scales are used as they are"
    ),
    "QC501": "the shards are merged into one dict: one copy wins silently",
    **dict.fromkeys(
        ["QC502", "QC503", "QC504", "QC506"],
        "an incomplete or broken shard set cannot be loaded: its tensors are missing",
    ),
    "QC861": "the same weights run: the quality producers keep these layers for is lost",
    "QC862": "the model's weights are missing: the layers they belong to cannot be built",
}
#: Existing codes consciously without effect on DiffSynth-Studio, and why.
LEFT_NONE: dict[str, str] = {
    **dict.fromkeys(
        ["QC800", "QC801", "QC802", "QC803"],
        "a GPU report about comfy-kitchen's kernels (check --gpu): DiffSynth runs them too, "
        "and its --gpu entries list the report (known_issues); no status changes",
    ),
    **dict.fromkeys(
        [*(f"QC83{n}" for n in range(8)), "QC840"],
        "a LoRA on a quantized base as ComfyUI loads it (quantcheck lora); this runtime's "
        "own LoRA path is runtimes/diffsynth_lora.py, judged by QC838/QC839",
    ),
    **dict.fromkeys(
        ["QC838", "QC839"],
        "no effect by default: a QC838 finding names this runtime in its own effects when "
        "this runtime's LoRA merge loses the LoRA; QC839 is a note",
    ),
    **dict.fromkeys(["QC119", "QC122"], "layout notes safetensors accepts"),
    "QC205": "U8 and I8 markers decode; other dtypes are QC735",
    "QC206": "DiffSynth reads a marker of any size",
    "QC207": "QC736 reports a BOM / UTF-16 marker for DiffSynth (it refuses it)",
    **dict.fromkeys(
        ["QC208", "QC209", "QC210", "QC211", "QC222"],
        "DiffSynth never reads the header _quantization_metadata (a header-only layer is QC733)",
    ),
    **dict.fromkeys(
        ["QC212", "QC213", "QC214", "QC223"],
        "DiffSynth's own rules judge the marker tensor's format and siblings (QC730, QC731)",
    ),
    **dict.fromkeys(
        ["QC215", "QC216", "QC218", "QC219", "QC220", "QC221", "QC225"],
        "keys DiffSynth does not read, or reads leniently (bool(), int(); QC732 for groups)",
    ),
    "QC301": "the only companion DiffSynth needs is weight_scale (QC731)",
    "QC302": "extra siblings of a marked layer are QC734",
    **dict.fromkeys(
        ["QC305", "QC311", "QC316", "QC319"],
        "no effect on the FP8/INT8 formats DiffSynth loads",
    ),
    **dict.fromkeys(
        ["QC308", "QC312", "QC313", "QC318", "QC321"],
        "formats DiffSynth refuses anyway (QC730)",
    ),
    **dict.fromkeys(["QC404", "QC405", "QC406", "QC409"], "formats DiffSynth refuses (QC730)"),
    "QC505": "the weight_map is not used to load the shards",
    **dict.fromkeys(
        [f"QC6{n:02d}" for n in (*range(1, 25), *range(30, 39), 50, 51)],
        "sglang's and ComfyUI's own loaders (safetensors reads F8_E8M0)",
    ),
    "QC860": ("ComfyUI's model detection; DiffSynth-Studio's own model detection was not read"),
    "QC863": (
        "modules outside the family's layout: DiffSynth-Studio's handling of unexpected "
        "keys was not read"
    ),
    "QC864": "information: the quantization topology",
}
OWN_CODES = ("QC730", "QC731", "QC732", "QC733", "QC734", "QC735", "QC736")
RELEASES = (
    Release(
        "2.1.12",
        note="PyPI wheel diffsynth==2.1.12 = upstream modelscope/DiffSynth-Studio @5881b2a: "
        "diffsynth/core/quant/backends/comfy_kitchen.py (_parse_marker, "
        "unflatten_state_dict) and core/loader/model.py (strict load_state_dict).",
    ),
)


def diffsynth_runtime() -> Runtime:
    """The DiffSynth-Studio runtime record."""
    return Runtime(
        "diffsynth",
        "DiffSynth-Studio",
        RELEASES,
        checks="quantcheck.rules.diffsynth.checks:DiffsynthChecks",
        gpu="quantcheck.rules.diffsynth.gpu:DIFFSYNTH_GPU",
        effects=EFFECTS,
        reasons={**WHY, **LEFT_NONE},
        messages="quantcheck.rules.diffsynth.messages:PATTERNS",
        folder="quantcheck.rules.diffsynth",
        default_target=False,
        doc="DiffSynth-Studio's comfy-kitchen backend (comfy_kitchen.py _parse_marker, "
        "unflatten_state_dict: marker tensors only, float8_e4m3fn and int8_tensorwise, strict "
        "load), read in and run from the PyPI wheel 2.1.12 (upstream @5881b2a).",
    )
