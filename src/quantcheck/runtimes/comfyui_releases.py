"""ComfyUI's releases as data: which marker formats each step of `QUANT_ALGOS` loads.

ComfyUI's format table (`comfy/quant_ops.py` QUANT_ALGOS, with `comfy/ops.py`
`_load_quantized_module`) grew in steps. Each step is a `Release`, named by its release where
one exists and else by the commit that introduced the change; each is a delta on the one
before. A layer whose format arrived in a later step is reported (by `ComfyuiChecks`) with that
step's code, QC606-QC609: the oldest release sets every such code to "fails", and the step that
adds the format sets its code back to "none". The newest release therefore loads every format.
A step may also name a per-layer code (`LAYER_CODE`: QC610 for the formats added after
0271a469, the release quantcheck's layer rules were read at); its effect follows the same step.

Sources (each step's commit or pull request, or the port it was read in):
- v0.16: float8_e4m3fn, float8_e5m2, nvfp4 (NVFP4: ComfyUI PR #11635). Read in Forge Neo's
  port of ComfyUI v0.16.4 (commit bfd09a1), not in ComfyUI's own tag.
- v0.27: + mxfp8, int8_tensorwise (int8: ComfyUI PR #14636, commit 1a510f04). mxfp8 is
  registered only when the installed comfy-kitchen has `TensorCoreMXFP8Layout`. Read in Forge
  Neo's port (939c56d) of v0.27.0.
- cd9452e: + convrot_w4a4, asym_w4a8_int8 (Comfy-Org/ComfyUI PR #15308), read at cd9452e.
- 0271a469: + awq_w4a16, read at 0271a469 (quantcheck's reference for every other rule).
- pr16483: + w6a8_int8 (`_GROUPED_INT8_FORMATS` in comfy/ops.py, PR #16483 merged 2026-09-29).
  [GUESS]: upstream ComfyUI's file at that merge was not read (only Forge Neo's port and
  third-party probes); the merge commit is not known, so the step is named by the PR.

Standard library only (the check path imports it); codes are written as strings because the
rule registry imports the runtimes.
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.builtin_reasons import COMFYUI as COMFYUI_REASONS
from quantcheck.runtimes.registry import Release, Runtime

#: Each step: (release name, rule code reporting formats that need it, formats it adds, note).
STEPS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "v0.16",
        "",
        ("float8_e4m3fn", "float8_e5m2", "nvfp4"),
        "ComfyUI v0.16.x: FP8 (e4m3fn, e5m2) and NVFP4 (PR #11635); read in Forge Neo's port "
        "bfd09a1 of v0.16.4.",
    ),
    (
        "v0.27",
        "QC606",
        ("mxfp8", "int8_tensorwise"),
        "ComfyUI v0.27.0: + int8_tensorwise (PR #14636, commit 1a510f04) and mxfp8 (only when "
        "the installed comfy-kitchen has TensorCoreMXFP8Layout); read in Forge Neo's port 939c56d.",
    ),
    (
        "cd9452e",
        "QC607",
        ("convrot_w4a4", "asym_w4a8_int8"),
        "Comfy-Org/ComfyUI cd9452e: + convrot_w4a4 and asym_w4a8_int8 (PR #15308).",
    ),
    ("0271a469", "QC608", ("awq_w4a16",), "Comfy-Org/ComfyUI 0271a469: + awq_w4a16."),
    (
        "pr16483",
        "QC609",
        ("w6a8_int8",),
        "[GUESS] ComfyUI after PR #16483 (merged 2026-09-29): + w6a8_int8; upstream's file at "
        "the merge was not read, and the merge commit is unknown (named by the PR).",
    ),
)

#: The release that first loads each format (formats not listed: no ComfyUI release does).
FORMAT_SINCE: dict[str, str] = {fmt: name for name, _, fmts, _ in STEPS for fmt in fmts}
#: The rule code reporting a layer that needs the release (empty for the oldest release).
STEP_CODE: dict[str, str] = {name: code for name, code, _, _ in STEPS}
#: The per-layer error a step's formats draw (beside the file-level step code): QC610 for the
#: formats ComfyUI gained after 0271a469, whose layers an older ComfyUI stops at.
LAYER_CODE: dict[str, str] = {"pr16483": "QC610"}
#: Whether ComfyUI's checks report QC606-QC609 (tests may turn it off). They never reach a
#: report for the newest release (no effect there): only `--target comfyui@RELEASE` shows them.
REPORT_STEPS = True
#: Releases whose guessed behaviour `explain` and the docs must call a guess.
GUESSED = frozenset({"pr16483"})


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
        out.append(Release(name, effects, f"{note} Formats: {', '.join(fmts)}.", quantize=quantize))
    return tuple(out)


RELEASES: tuple[Release, ...] = _releases()


def comfyui_runtime() -> Runtime:
    """The ComfyUI runtime record: its releases, oldest first, and its own checks."""
    return Runtime(
        "comfyui",
        "ComfyUI",
        RELEASES,
        checks="quantcheck.rules.comfyui_rules:ComfyuiChecks",
        default_target=True,
        catalog=True,
        reasons=dict(COMFYUI_REASONS),
        doc="ComfyUI's quantized-op loader (comfy/ops.py, QUANT_ALGOS) with comfy-kitchen; "
        "verdicts describe the default GPU setup: the DynamicVRAM safetensors loader "
        "(comfy/utils.py load_safetensors, which cannot read F8_E8M0) and the device's quantized "
        "kernels. The comfyui-cpu target describes ComfyUI started with --cpu "
        "(safetensors.safe_open, layers computed on the CPU).",
    )
