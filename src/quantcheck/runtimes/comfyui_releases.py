"""ComfyUI's releases as data: which marker formats each step of `QUANT_ALGOS` loads.

ComfyUI's format table (`comfy/quant_ops.py` QUANT_ALGOS, with `comfy/ops.py`
`_load_quantized_module`) grew in steps. Each step is a `Release`, named by the first ComfyUI
release that shipped it (the release whose `comfyui_version.py` bump has the step's commit in its
history); a step no known release is shown to contain is named by its commit, or by its merge
date; each is a delta on the one before. The commit spellings quantcheck used before (`v0.16`,
`cd9452e`, `pr16483`) stay accepted as aliases. A layer whose format arrived in a later step is
reported (by `ComfyuiChecks`) with that step's code: the oldest release sets every such code to
"fails", and the step that adds the format sets its code back to "none". The newest release
therefore loads every format. A step may also name a per-layer code (`LAYER_CODE`: QC610 for the
formats added after 0271a469, the commit quantcheck's layer rules were read at); its effect
follows the same step.

Sources: which release shipped a commit was read in ComfyUI's own history (the
patientx/ComfyUI-Zluda mirror of Comfy-Org/ComfyUI: `git log -S` on comfy/quant_ops.py for the
commit that added the format, then the first `ComfyUI vX.Y.0` version bump that contains it; the
mirror has no tags and ends at 783545f6, 2026-08-22):
- v0.8: float8_e4m3fn, float8_e5m2, nvfp4 (PR #11635, commit 6da00dd8, 2026-01-05; v0.8.0 is
  fc0cb10b, 2026-01-07). Also read in Forge Neo's port bfd09a1 of v0.16.4 (alias `v0.16`: v0.16.x
  has the same three formats).
- v0.18: + mxfp8 (PR #12907, commit 1c5db739, 2026-03-14; v0.18.0 is dc719cde, 2026-03-20),
  registered only when the installed comfy-kitchen has `TensorCoreMXFP8Layout`.
- v0.27: + int8_tensorwise (PR #14636, commit 1a510f04, 2026-06-25; v0.27.0 is bb131be9,
  2026-06-30). Also read in Forge Neo's port 939c56d of v0.27.0.
- v0.28: + convrot_w4a4 (PR #14859, commit 73e84d5e, 2026-07-09; v0.28.0 is 700821e1, 2026-07-15).
- v0.31: + asym_w4a8_int8 (PR #15308, commit 344b4398, 2026-08-07; v0.31.0 is 43cb4fff, released
  2026-08-08), read at cd9452e (alias `cd9452e`: it has the same formats).
- 0271a469: + awq_w4a16, read at 0271a469 (quantcheck's reference for every other rule). Not in
  v0.33.0 nor at 783545f6 (2026-08-22); the first release that has it is not known, so the step
  keeps its commit name.
- 2026-09-29: + w6a8_int8 (`_GROUPED_INT8_FORMATS` in comfy/ops.py, PR #16483 merged 2026-09-29;
  alias `pr16483`). [GUESS]: upstream ComfyUI's file at that merge was not read (only Forge Neo's
  port and third-party probes); neither the merge commit nor the first release with it is known,
  so the step is named by the merge date, and a status that rests on it says "unverified".

Standard library only (the check path imports it); codes are written as strings because the
rule registry imports the runtimes.
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime
from quantcheck.runtimes.sglang_releases import ALIGN, NO_SUB_BYTE, PADDING

#: Each step: (release name, rule code reporting formats that need it, formats it adds, note).
STEPS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "v0.8",
        "",
        ("float8_e4m3fn", "float8_e5m2", "nvfp4"),
        "ComfyUI v0.8.0: FP8 (e4m3fn, e5m2) and NVFP4 (PR #11635, commit 6da00dd8); also read in "
        "Forge Neo's port bfd09a1 of v0.16.4.",
    ),
    (
        "v0.18",
        "QC650",
        ("mxfp8",),
        "ComfyUI v0.18.0: + mxfp8 (PR #12907, commit 1c5db739; only when the installed "
        "comfy-kitchen has TensorCoreMXFP8Layout).",
    ),
    (
        "v0.27",
        "QC606",
        ("int8_tensorwise",),
        "ComfyUI v0.27.0: + int8_tensorwise (PR #14636, commit 1a510f04); also read in Forge "
        "Neo's port 939c56d.",
    ),
    (
        "v0.28",
        "QC651",
        ("convrot_w4a4",),
        "ComfyUI v0.28.0: + convrot_w4a4 (PR #14859, commit 73e84d5e).",
    ),
    (
        "v0.31",
        "QC607",
        ("asym_w4a8_int8",),
        "ComfyUI v0.31.0 (released 2026-08-08): + asym_w4a8_int8 (PR #15308, commit 344b4398); "
        "read at Comfy-Org/ComfyUI cd9452e.",
    ),
    (
        "0271a469",
        "QC608",
        ("awq_w4a16",),
        "Comfy-Org/ComfyUI 0271a469: + awq_w4a16 (the first release with it is not known: not "
        "in v0.33.0 nor at 783545f6).",
    ),
    (
        "2026-09-29",
        "QC609",
        ("w6a8_int8",),
        "[GUESS] ComfyUI after PR #16483 (merged 2026-09-29): + w6a8_int8; upstream's file at "
        "the merge was not read, and neither the merge commit nor its first release is known "
        "(named by the merge date).",
    ),
)
#: Spellings each step was known by before it was named by its release (still accepted).
ALIASES: dict[str, tuple[str, ...]] = {
    "v0.8": ("v0.16",),
    "v0.31": ("cd9452e",),
    "2026-09-29": ("pr16483",),
}
#: Steps whose formats were not read in ComfyUI's own code: step -> format -> why (a status
#: that rests on such a format says "unverified" with the reason).
UNVERIFIED: dict[str, dict[str, str]] = {
    "2026-09-29": {"w6a8_int8": "w6a8_int8 support read from a port, not from ComfyUI"},
}

#: The release that first loads each format (formats not listed: no ComfyUI release does).
FORMAT_SINCE: dict[str, str] = {fmt: name for name, _, fmts, _ in STEPS for fmt in fmts}
#: The rule code reporting a layer that needs the release (empty for the oldest release).
STEP_CODE: dict[str, str] = {name: code for name, code, _, _ in STEPS}
#: The per-layer error a step's formats draw (beside the file-level step code): QC610 for the
#: formats ComfyUI gained after 0271a469, whose layers an older ComfyUI stops at.
LAYER_CODE: dict[str, str] = {"2026-09-29": "QC610"}
#: Releases whose guessed behaviour `explain` and the docs must call a guess.
GUESSED = frozenset(UNVERIFIED)
#: Rule names that named a step by its former spelling (accepted by `--select`, `explain`).
RULE_ALIASES: dict[str, str] = {
    f"format-needs-comfyui-{old}": STEP_CODE[new]
    for new, olds in ALIASES.items()
    for old in olds
    if STEP_CODE.get(new)
}


def step_codes(name: str) -> tuple[str, ...]:
    """The codes whose effect the step `name` turns from "fails" to "none"."""
    return tuple(c for c in (STEP_CODE.get(name, ""), LAYER_CODE.get(name, "")) if c)


def before(name: str) -> str:
    """The release just before step `name` (the newest that lacks its formats)."""
    names = [n for n, _, _, _ in STEPS]
    return names[names.index(name) - 1]


def _releases() -> tuple[Release, ...]:
    """Each step as a delta: the oldest release fails every later step's codes and refuses to
    have `quantize` write a later step's formats; each step lifts its own."""
    oldest = {c: Effect.FAILS for n, _, _, _ in STEPS for c in step_codes(n)}
    later: dict[str, str | None] = {
        fmt: f"ComfyUI before {name} has no {fmt} in QUANT_ALGOS (added in {name}"
        + (" [GUESS]" if name in GUESSED else "")
        + ")"
        for name, _, fmts, _ in STEPS[1:]
        for fmt in fmts
    }
    out = []
    for i, (name, _, fmts, note) in enumerate(STEPS):
        effects = oldest if i == 0 else dict.fromkeys(step_codes(name), Effect.NONE)
        quantize: dict[str, str | None] = later if i == 0 else dict.fromkeys(fmts, None)
        out.append(
            Release(
                name,
                effects,
                f"{note} Formats: {', '.join(fmts)}.",
                quantize=quantize,
                aliases=ALIASES.get(name, ()),
                unverified=UNVERIFIED.get(name, {}),
            )
        )
    return tuple(out)


RELEASES: tuple[Release, ...] = _releases()
#: the `Runtime.paths` hook of the ComfyUI targets (comfyui, comfyui-cpu)
UNVERIFIED_HOOK = "quantcheck.rules.comfyui.checks:unverified_json"


#: Why a generic rule leaves ComfyUI unaffected where its catalog entry's prose does not say
#: (the catalogs declare ComfyUI's effects; these are the nones their evidence is about the
#: other runtime or about other tools).
REASONS: dict[str, str] = {
    "QC119": NO_SUB_BYTE,
    "QC122": ALIGN,
    "QC205": "_load_quantized_module decodes the marker from its raw bytes "
    "(numpy().tobytes()): any dtype reads the same JSON",
    "QC206": "json.loads reads markers of any size",
    "QC211": "convert_old_quants writes the header entry over the tensor marker, and "
    "convrot is only tested for truthiness",
    "QC215": "_load_quantized_module reads only the keys it knows: producer _ keys are ignored",
    "QC218": "convrot is tested for truthiness (layer_conf.get('convrot'), ops.py ~L1231)",
    "QC308": "the padded, swizzled layout is comfy-kitchen's own: ComfyUI loads it as written",
    "QC312": "comfy-kitchen reads the W4A8 code width from the group scales: 6-bit layers load",
    "QC316": "ComfyUI builds INT8 linears quantized with or without convrot",
    "QC318": "the nvfp4 branch of _load_quantized_module never reads convrot",
    "QC405": PADDING,
    "QC505": "ComfyUI loads the files it is given, not the index's weight_map",
}


def comfyui_runtime() -> Runtime:
    """The ComfyUI runtime record: its releases, oldest first, and its own checks."""
    return Runtime(
        "comfyui",
        "ComfyUI",
        RELEASES,
        checks="quantcheck.rules.comfyui.checks:ComfyuiChecks",
        paths=UNVERIFIED_HOOK,
        messages="quantcheck.rules.comfyui.messages:PATTERNS",
        folder="quantcheck.rules.comfyui",
        gpu="quantcheck.rules.comfyui.gpu:COMFYUI_GPU",
        keys="quantcheck.rules.comfyui.keys:COMFYUI_KEYS",
        default_target=True,
        catalog=True,
        reasons=dict(REASONS),
        doc="ComfyUI's quantized-op loader (comfy/ops.py, QUANT_ALGOS) with comfy-kitchen; "
        "verdicts describe the default GPU setup: the DynamicVRAM safetensors loader "
        "(comfy/utils.py load_safetensors, which cannot read F8_E8M0) and the device's quantized "
        "kernels. The comfyui-cpu target describes ComfyUI started with --cpu "
        "(safetensors.safe_open, layers computed on the CPU).",
    )
