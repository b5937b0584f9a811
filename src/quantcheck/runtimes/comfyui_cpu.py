"""ComfyUI started with `--cpu` (or `--disable-dynamic-vram`) as its own target: `comfyui-cpu`.

ComfyUI has two safetensors loaders (../shared/spec/comfyui-loader-facts.md, "Load paths"):
- the default on NVIDIA GPUs, DynamicVRAM: `main.py` turns it on (`comfy/cli_args.py`
  `enables_dynamic_vram`) and `comfy/utils.py load_safetensors` parses the header itself,
  mapping dtypes through its `_TYPES` table (~L133), which has no F8_E8M0. The `comfyui` target
  describes this loader (QC605: any F8_E8M0 tensor stops the load).
- with `--cpu` or `--disable-dynamic-vram`: `safetensors.safe_open`, which reads F8_E8M0. This
  target describes it.

Everything after the header read is the same code (`comfy/ops.py _load_quantized_module`,
`QUANT_ALGOS`), so the target is a fork (`based_on="comfyui"`) whose effects table changes only
what the loader choice changes:
- QC605 (an F8_E8M0 tensor): none — safe_open maps it.
- QC305 on an MXFP8 `weight_scale` stored as F8_E8M0: none instead of fails (the instance says
  so by name, `layer_rules._companion_dtype`): `_load_quantized_module` views the scale as
  float8_e8m0fnu whatever its stored dtype (comfy/ops.py @0271a469 ~L1213), so the layer is
  the same as with U8 bytes (established by tests/rules/diff_comfyui, ComfyUI's own code).

Release steps: a `based_on` fork's base is looked up at the base's NEWEST release
(`registry.effect_on`), so `comfyui-cpu@v0.27` could not see ComfyUI's per-release format
steps through the base. The fork therefore carries ComfyUI's own release records
(`comfyui_releases.RELEASES`, the same names and deltas): its own table answers the step codes
QC606-QC610 at every release, and every other code (identical on all ComfyUI releases) falls
through to the base.

Standard library only (the check path imports it).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.comfyui_releases import RELEASES
from quantcheck.runtimes.registry import Runtime

NAME = "comfyui-cpu"
TITLE = "ComfyUI (--cpu)"

#: Codes whose effect under the safe_open loader differs from the default (DynamicVRAM) one.
EFFECTS: dict[str, Effect] = {
    # comfy/utils.py load_safetensors' _TYPES has no F8_E8M0; safetensors.safe_open has it
    "QC605": Effect.NONE,
}


def comfyui_cpu_runtime() -> Runtime:
    """The `comfyui-cpu` runtime record (ComfyUI with the safe_open loader)."""
    return Runtime(
        NAME,
        TITLE,
        RELEASES,
        based_on="comfyui",
        effects=dict(EFFECTS),
        doc="ComfyUI started with --cpu or --disable-dynamic-vram: safetensors are read with "
        "safetensors.safe_open (not the DynamicVRAM header parser of comfy/utils.py "
        "load_safetensors), so F8_E8M0 tensors load; the quantized-op loader (comfy/ops.py, "
        "QUANT_ALGOS) and every other verdict are ComfyUI's.",
        default_target=False,
    )
