"""Forge Neo (Haoming02/sd-webui-forge-classic, its `neo` line) as data: a ComfyUI fork.

Forge Neo loads ComfyUI checkpoints through ports of ComfyUI's files (read upstream in
Haoming02/sd-webui-forge-classic):
- `backend/state_dict.py` `convert_quantization` (port of ComfyUI v0.19.0
  `convert_old_quants`): every `_quantization_metadata` header entry is written as a
  `<layer>.comfy_quant` tensor, replacing a tensor marker of the same layer whole (read at
  4e6b147); legacy `scaled_fp8` files are converted as ComfyUI does.
- `backend/operations_mixed_precision.py` `_load_quantized_module` (port of ComfyUI v0.27.0
  ops.py, read at 1835c9c; the v0.16.4 port read at 700441c): the marker is decoded with
  `json.loads`, its format looked up in `QUANT_ALGOS` (KeyError for a name not there), scales
  per format.
- `backend/quant_ops.py` `QUANT_ALGOS`: bfd09a1 (v0.16.4 port) = float8_e4m3fn, float8_e5m2,
  nvfp4; 939c56d (v0.27.0 port) = + mxfp8, int8_tensorwise. The ops file at 1835c9c handles
  convrot_w4a4 and the grouped INT8 formats, but the newest quant_ops read (939c56d) has no
  entry for them, so the lookup raises KeyError first. [GUESS] no later quant_ops adds them:
  unattributed copies of a Forge-Neo-style quant_ops elsewhere add convrot_w4a4.
- `backend/utils.py` `load_torch_file` reads safetensors with `safetensors.safe_open` (not
  ComfyUI's DynamicVRAM header parser), so ComfyUI's F8_E8M0 loader failure does not apply.

Release names: Forge Neo publishes no numbered releases that these commits could be matched
to, so each step keeps the commit it was read at (the ComfyUI release each port follows is in
its note).

Every other finding follows ComfyUI (`based_on="comfyui"`): the ports keep ComfyUI's checks
and silent behaviours (header names that match no tensor leave plain weights, as in ComfyUI).
Standard library only (the check path imports it); codes are strings (the rule registry
imports the runtimes).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.registry import Release, Runtime

NAME = "forge-neo"
TITLE = "Forge Neo"

#: Each step of Forge Neo's QUANT_ALGOS: (release, rule code reporting formats that need it,
#: formats it adds, note). The oldest step has no code.
STEPS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "bfd09a1",
        "",
        ("float8_e4m3fn", "float8_e5m2", "nvfp4"),
        "backend/quant_ops.py at bfd09a1, a port of ComfyUI v0.16.4: FP8 (e4m3fn, e5m2) and NVFP4.",
    ),
    (
        "939c56d",
        "QC702",
        ("mxfp8", "int8_tensorwise"),
        "backend/quant_ops.py at 939c56d, a port of ComfyUI v0.27.0: + mxfp8, int8_tensorwise "
        "([GUESS] with the ops file's branches for them, read only at 1835c9c).",
    ),
    (
        "1835c9c",
        "",
        (),
        "backend/operations_mixed_precision.py at 1835c9c, a port of ComfyUI v0.27.0 ops.py: "
        "handles convrot_w4a4, asym_w4a8_int8 and w6a8_int8, but QUANT_ALGOS (939c56d) still "
        "lacks them, so verdicts are those of 939c56d.",
    ),
)

#: Formats the newest modelled Forge Neo loads.
FORMATS: frozenset[str] = frozenset(f for _, _, fmts, _ in STEPS for f in fmts)
#: The release that first loads each format.
FORMAT_SINCE: dict[str, str] = {f: name for name, _, fmts, _ in STEPS for f in fmts}
#: The rule code reporting a layer that needs a release (empty for the oldest release).
STEP_CODE: dict[str, str] = {name: code for name, code, _, _ in STEPS}

#: Generic and ComfyUI codes whose effect on Forge Neo differs from ComfyUI's.
EFFECTS: dict[str, Effect] = {
    # safetensors.safe_open reads F8_E8M0 (backend/utils.py load_torch_file)
    "QC605": Effect.NONE,
    # ComfyUI's release steps and format table: Forge Neo's own are QC701/QC702
    "QC606": Effect.NONE,
    "QC607": Effect.NONE,
    "QC608": Effect.NONE,
    "QC609": Effect.NONE,
    "QC610": Effect.NONE,
    "QC650": Effect.NONE,
    "QC651": Effect.NONE,
}

#: Codes whose effect on Forge Neo is ComfyUI's (the ported loader behaves the same), with
#: why; each was decided, not defaulted: a new code must be added here, to EFFECTS, or to the
#: own rules.
FOLLOWS: dict[str, str] = {
    **dict.fromkeys(
        (*(f"QC83{n}" for n in range(10)), "QC840"),
        "LoRAs load through ports of ComfyUI's key map and patch, re-quantized by ComfyUI's "
        "quantizers with the same seed (runtimes/forge_neo_lora.py; Forge #1428: NVFP4 LoRAs "
        "weak)",
    ),
    **dict.fromkeys(
        (f"QC1{n:02d}" for n in range(1, 23)), "the same safetensors reader failures as ComfyUI"
    ),
    **dict.fromkeys(
        (
            "QC201", "QC202", "QC203", "QC204", "QC205", "QC206", "QC207", "QC208", "QC209",
            "QC210", "QC211", "QC212", "QC213", "QC214", "QC215", "QC216", "QC218", "QC219",
            "QC220", "QC221", "QC222", "QC223", "QC225",
        ),
        "ComfyUI's marker handling, ported: json.loads of the tensor bytes, the format "
        "lookup, header entries written as markers",
    ),
    **dict.fromkeys(
        (
            "QC301", "QC302", "QC303", "QC304", "QC305", "QC306", "QC307", "QC308", "QC311",
            "QC312", "QC313", "QC314", "QC315", "QC316", "QC318", "QC319", "QC320", "QC321",
        ),
        "the same per-format scale handling as ComfyUI's ops.py (ported)",
    ),
    **dict.fromkeys(
        ("QC401", "QC402", "QC403", "QC404", "QC405", "QC406", "QC407", "QC408", "QC409"),
        "the same comfy-kitchen layouts compute the same values",
    ),
    **dict.fromkeys(
        ("QC501", "QC502", "QC503", "QC504", "QC505", "QC506"),
        "shards are merged and loaded as ComfyUI does: a missing shard's tensors are missing",
    ),
    **dict.fromkeys(
        (
            "QC601", "QC602", "QC603", "QC604", "QC611", "QC612", "QC613", "QC614", "QC615",
            "QC616", "QC617", "QC618", "QC619", "QC620", "QC621", "QC622", "QC623", "QC624",
            "QC630", "QC631", "QC632", "QC633", "QC634", "QC635", "QC636", "QC637", "QC638",
        ),
        "sglang's own codes (none on ComfyUI; QC620, a header-only rowwise format, fails "
        "ComfyUI and Forge alike)",
    ),
    **dict.fromkeys(
        ("QC800", "QC801", "QC802", "QC803"),
        "GPU reports (check --gpu) about the comfy-kitchen kernels Forge Neo runs too",
    ),
    **dict.fromkeys(
        ("QC860", "QC861", "QC862", "QC863", "QC864"),
        "the model family's contract: Forge Neo loads the same state dict as ComfyUI, and "
        "its model detection (huggingface_guess) derives from ComfyUI's model_detection "
        "[GUESS: not re-read]",
    ),
}  # fmt: skip
FOLLOWS_COMFYUI: tuple[str, ...] = tuple(FOLLOWS)
#: Why each code of EFFECTS differs from ComfyUI on Forge Neo.
WHY: dict[str, str] = {
    "QC605": "safetensors.safe_open reads F8_E8M0 (backend/utils.py load_torch_file)",
    **dict.fromkeys(
        ("QC606", "QC607", "QC608", "QC609", "QC610"),
        "ComfyUI's release steps and format table: Forge Neo's own are QC701/QC702",
    ),
}


def _releases() -> tuple[Release, ...]:
    oldest = {c: Effect.FAILS for _, c, _, _ in STEPS if c}
    out = []
    for i, (name, code, fmts, note) in enumerate(STEPS):
        effects = oldest if i == 0 else ({code: Effect.NONE} if code else {})
        formats = f" Formats: {', '.join(fmts)}." if fmts else ""
        out.append(Release(name, effects, note + formats))
    return tuple(out)


RELEASES: tuple[Release, ...] = _releases()


def forge_neo_runtime() -> Runtime:
    """The Forge Neo runtime record (a ComfyUI fork: `based_on="comfyui"`)."""
    return Runtime(
        NAME,
        TITLE,
        RELEASES,
        checks="quantcheck.rules.forge_neo.checks:ForgeNeoChecks",
        gpu="quantcheck.rules.forge_neo.gpu:FORGE_NEO_GPU",
        based_on="comfyui",
        effects=dict(EFFECTS),
        reasons={**WHY, **{c: f"as ComfyUI: {why}" for c, why in FOLLOWS.items()}},
        doc="Forge Neo's ports of ComfyUI's loader (Haoming02/sd-webui-forge-classic "
        "backend/quant_ops.py QUANT_ALGOS at bfd09a1/939c56d, operations_mixed_precision.py "
        "_load_quantized_module at 1835c9c, state_dict.py convert_quantization): its own "
        "format table and header-replaces-marker conversion; ComfyUI's verdicts otherwise.",
        default_target=False,
        messages="quantcheck.rules.forge_neo.messages:PATTERNS",
        folder="quantcheck.rules.forge_neo",
    )
