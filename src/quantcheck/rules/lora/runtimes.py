"""The other runtimes' LoRA paths (`runtimes/lora_path.LORA_PATHS`) on one analysis: per
patched quantized layer and runtime its outcome, and the figures of what arrives.

Outcomes come from the headers (standard library). Figures: a side branch keeps the whole
LoRA (retention 1, added error 0: exact, no weights needed); a runtime that re-quantizes as
ComfyUI does (Forge Neo) gets ComfyUI's figures; SD.Next's SDNQ re-quantization and the 16-bit
merges (InvokeAI, sd.cpp) are computed from the weights (`runtime_figures`, numpy).
"""

from __future__ import annotations

from quantcheck.runtimes.lora_path import COMFY, lora_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    import numpy as np

    from quantcheck.rules.lora.analyse import Analysis, LayerResult

EXACT = {"retention": 1.0, "added_error": 0.0, "requant_error": 0.0}


def lora_runtimes(targets: Iterable[str]) -> list[str]:
    """The runtimes of `targets` (keys) whose LoRA path is modelled here, once each, in order."""
    out: list[str] = []
    for t in targets:
        name = t.split("@")[0]
        if name not in COMFY and lora_path(name) is not None and name not in out:
            out.append(name)
    return out


def fill_outcomes(a: Analysis) -> None:
    """Each quantized layer's `runtimes[rt]`: the default mode's outcome, with the side
    branch's exact figures."""
    for r in a.layers:
        if not r.quantized:
            continue
        for rt in a.runtimes:
            path = lora_path(rt)
            assert path is not None
            outcome = path.outcome_of(r.format)
            entry: dict[str, Any] = {"outcome": outcome}
            if outcome == "side-branch" and r.problem is None:
                entry.update(EXACT, basis="exact")
            r.runtimes[rt] = entry


def runtime_figures(
    r: LayerResult,
    w: np.ndarray | None = None,
    delta: np.ndarray | None = None,
    options: dict[str, Any] | None = None,
) -> None:
    """Fill the figures of `r`'s runtimes that merge: ComfyUI's own for a ComfyUI-style
    re-quantization (its basis), computed from `w` (the dequantized layer), `delta` (s·ΔW)
    and the layer's `options` (its ConvRot settings) for the others; without weights only
    the ComfyUI-style ones get figures."""
    for rt, entry in r.runtimes.items():
        path = lora_path(rt)
        if path is None or entry["outcome"] not in ("requantized", "merged"):
            continue
        if r.problem is not None:
            entry.update(retention=0.0, added_error=None, requant_error=None, basis="shape")
            continue
        if path.requant == "comfyui":
            if r.figures is not None:
                entry.update(
                    {k: r.figures.get(k) for k in ("retention", "added_error", "requant_error")},
                    basis=f"{r.basis} (ComfyUI's re-quantization)",
                )
            continue
        if w is None or delta is None:
            entry["basis"] = "not estimated (needs the weights)"
            continue
        entry.update(_computed(path.requant, r.format, w, delta, options or {}))


def _computed(
    requant: str, fmt: str, w: np.ndarray, delta: np.ndarray, options: dict[str, Any]
) -> dict[str, Any]:
    from quantcheck.numeric.lora_patch import figures
    from quantcheck.numeric.lora_requant import merge16, sdnq_requant

    if requant == "sdnq":
        opts = {k: v for k, v in options.items() if k in ("convrot", "convrot_groupsize")}
        got = sdnq_requant(w + delta, fmt, opts)
        base = sdnq_requant(w, fmt, opts)
        fig = figures(w, delta, got, base)
        basis = "measured (SDNQ round-to-nearest)"
    else:
        base16, merged = merge16(w, delta, requant)
        fig = figures(base16, delta, merged, base16)
        basis = f"measured ({requant} merge)"
    return {
        "retention": fig["retention"],
        "added_error": fig["added_error"],
        "requant_error": fig["requant_error"],
        "basis": basis,
    }
