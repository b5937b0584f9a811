"""How a runtime applies a LoRA to a quantized layer, as data: one `LoraPath` per runtime
(`runtimes/<runtime>_lora.py`), collected in `LORA_PATHS`.

Outcomes of a LoRA patch on one quantized layer (`OUTCOMES`): the runtime merges it into the
dequantized weight and re-quantizes in its own way (`requant` names how: "comfyui" = ComfyUI's
seeded stochastic rounding with recalculated scales, `numeric/lora_patch.requantize`; "sdnq" =
SD.Next's SDNQ round-to-nearest, `numeric/lora_requant.sdnq_requant`), merges it into a 16-bit
weight ("bf16"/"f16": the layer was dequantized at load), keeps it as a side branch computed in
high precision beside the quantized matmul (retention 1, added error 0: its price is speed and
memory), runs the layer dequantized every step, makes the load raise, or never sees the layer
(the runtime does not load that format: its own findings say so).

ComfyUI's (and comfyui-cpu's) path is modelled in full by `rules/lora/` from
`runtimes/comfyui_lora.py`; its entry here only names it. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import OUTCOMES, LoraPath

__all__ = ["COMFY", "LORA_PATHS", "OUTCOMES", "LoraPath", "lora_path"]


def _paths() -> dict[str, LoraPath]:
    from quantcheck.runtimes import (
        diffsynth_lora,
        forge_neo_lora,
        invokeai_lora,
        musubi_lora,
        sdcpp_lora,
        sdnext_lora,
        sglang_lora,
    )

    mods = (
        sglang_lora,
        forge_neo_lora,
        sdnext_lora,
        invokeai_lora,
        sdcpp_lora,
        diffsynth_lora,
        musubi_lora,
    )
    return {m.PATH.runtime: m.PATH for m in mods}


#: ComfyUI's own path (modelled by rules/lora/, not by a LoraPath)
COMFY = ("comfyui", "comfyui-cpu")
#: runtime name -> its LoRA path (every modelled runtime but ComfyUI)
LORA_PATHS: dict[str, LoraPath] = _paths()


def lora_path(runtime: str) -> LoraPath | None:
    """The LoRA path of a runtime name (a target key's part before "@")."""
    return LORA_PATHS.get(runtime.split("@")[0])
