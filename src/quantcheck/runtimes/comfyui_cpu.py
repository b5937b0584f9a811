"""ComfyUI started with `--cpu` as its own target: `comfyui-cpu`.

ComfyUI has two safetensors loaders (established by running its loading code):
- the default on NVIDIA GPUs, DynamicVRAM: `main.py` turns it on (`comfy/cli_args.py`
  `enables_dynamic_vram`) and `comfy/utils.py load_safetensors` parses the header itself,
  mapping dtypes through its `_TYPES` table (~L133), which has no F8_E8M0. The `comfyui` target
  describes this loader (QC605: any F8_E8M0 tensor stops the load).
- with `--cpu` or `--disable-dynamic-vram`: `safetensors.safe_open`, which reads F8_E8M0. This
  target describes it.

`--cpu` also computes on the CPU, where ComfyUI runs fp8 / NVFP4 / MXFP8 layers dequantized
(`comfy/ops.py get_disabled_quant_formats`: no such compute on the device). ComfyUI on a GPU
with `--disable-dynamic-vram` reads files like this target but computes like `comfyui`: it is
not modelled on its own (only QC605 would differ from `comfyui`).

Everything else is the same code (`comfy/ops.py _load_quantized_module`, `QUANT_ALGOS`), so the
target is a fork (`based_on="comfyui"`) whose effects differ only where the loader or the CPU
compute path changes the outcome (each established by tests/rules/comfyui/diff, ComfyUI's own
code at 0271a469):
- QC605 (an F8_E8M0 tensor): none — safe_open maps it.
- QC305 on an MXFP8 `weight_scale` stored as F8_E8M0: none instead of fails (the instance says
  so by name, `rules/layers/checks._companion_dtype`): `_load_quantized_module` views the scale as
  float8_e8m0fnu whatever its stored dtype (comfy/ops.py @0271a469 ~L1213), so the layer is
  the same as with U8 bytes.
- QC307 on an FP8 `weight_scale` of shape [N, 1]: none instead of fails (by name,
  `rules/layers/checks._cpu_per_row_fp8`): the CPU dequantizes the layer and broadcasts the
  scale per row; only the GPU's torch._scaled_mm refuses it.

Release steps: a `based_on` fork's base is looked up at the base's NEWEST release
(`registry.effect_on`), so `comfyui-cpu@v0.27` could not see ComfyUI's per-release format
steps through the base. The fork therefore carries ComfyUI's own release records
(`comfyui_releases.RELEASES`, the same names, aliases and deltas): its own table answers the
step codes (QC606-QC610, QC650, QC651) at every release, and every other code (identical on all
ComfyUI releases) falls through to the base.

Standard library only (the check path imports it).
"""

from __future__ import annotations

from quantcheck.rules.levels import Effect
from quantcheck.runtimes.comfyui_releases import RELEASES, UNVERIFIED_HOOK
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
        reasons={"QC605": "safetensors.safe_open (the --cpu loader) maps F8_E8M0"},
        paths=UNVERIFIED_HOOK,
        doc="ComfyUI started with --cpu: safetensors are read with safetensors.safe_open "
        "(not the DynamicVRAM header parser of comfy/utils.py load_safetensors), so F8_E8M0 "
        "tensors load, and fp8/NVFP4/MXFP8 layers run dequantized on the CPU "
        "(get_disabled_quant_formats), so an FP8 [N, 1] weight scale works; the quantized-op "
        "loader (comfy/ops.py, QUANT_ALGOS) and every other verdict are ComfyUI's.",
        default_target=False,
    )
