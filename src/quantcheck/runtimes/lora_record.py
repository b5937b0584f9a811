"""The record of a runtime's LoRA path on quantized layers (`LoraPath`) and the outcomes it
can name; the records are `runtimes/<runtime>_lora.py`, collected in `lora_path.py`.
Standard library only.
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
