"""ComfyUI (with comfy-kitchen 0.2.40) on a GPU (issue 24): comfy-kitchen asked in ComfyUI's
order with ComfyUI's gates, switches and loader — the defaults of `rules/gpu/kitchen.py`.
ComfyUI's ports (`rules/forge_neo/gpu.py`) derive from `ComfyuiGpu`. Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.kitchen import KitchenGpu


class ComfyuiGpu(KitchenGpu):
    """ComfyUI @783545f6 (ops/quant_ops @0271a469): the base's hooks as they are."""

    name = "comfyui"


COMFYUI_GPU = ComfyuiGpu()
