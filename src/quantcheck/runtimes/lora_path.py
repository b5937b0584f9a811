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

from quantcheck._record import factory, record

#: outcome -> what it means for the layer and the LoRA
OUTCOMES = {
    "requantized": "merged into the dequantized weight, then re-quantized in the runtime's way",
    "merged": "merged into the 16-bit weight the runtime dequantized the layer to at load",
    "side-branch": "kept beside the quantized matmul as x @ A @ B in high precision: all of the "
    "LoRA arrives; each step pays two thin GEMMs and the factors' memory",
    "dequantized": "the layer runs dequantized every step with the LoRA merged in its compute "
    "dtype (the quantized kernel is skipped)",
    "raises": "the runtime's LoRA load raises",
    "not-loaded": "the runtime does not load this format (its own findings say so)",
}


@record
class LoraPath:
    """One runtime's LoRA path on quantized layers, read in its code."""

    #: the runtime's registered name
    runtime: str
    #: the code it was read in (release, wheel or commit)
    read_at: str
    #: the mode a user gets without options, and every mode: name -> what it does
    default_mode: str
    modes: dict[str, str]
    #: format -> outcome in the default mode (a format not listed: `other`)
    outcome: dict[str, str]
    other: str = "not-loaded"
    #: how a "requantized"/"merged" outcome rounds (see the module doc)
    requant: str = ""
    #: how LoRA keys find layers, in a sentence; "comfyui" when ComfyUI's key map is ported
    #: (the keys are predicted as ComfyUI's), "own" when not predicted key by key
    keys: str = ""
    key_map: str = "own"
    #: fact -> where it was read / run (file, function, version; [READ] or [RUN])
    evidence: dict[str, str] = factory(dict)
    #: "[RUN]" when the outcome was proven by running the runtime's code, else "[READ]"
    verified: str = "[READ]"
    #: the speed / memory price of the default mode, in a sentence
    cost: str = ""

    def outcome_of(self, fmt: str) -> str:
        """The default mode's outcome for a quantized layer of `fmt`."""
        return self.outcome.get(fmt, self.other)


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
