"""What the runtimes' LoRA differentials compare (InvokeAI's patch, SD.Next's SDNQ
re-quantization; `make diff-consumers`): `quantcheck lora`'s figures for a runtime on a
generated Wan base/LoRA pair against those of the runtime's own result, and the reference
delta s·ΔW both sides approximate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.lora.analyse import analyse

from .pairs import WAN_LAYERS, wan_base, write_lora

ALL = [f"blocks.0.{n}" for n in WAN_LAYERS]
#: retention: absolute; added error: relative (the delta's float32 product order differs)
TOLERANCE = {"retention": 0.02, "added_error": 0.03}


def wan_pair(tmp: Path, fmt: str, **lora: Any) -> tuple[Path, Path]:
    """(base, LoRA): a Wan base of `fmt` and a kohya LoRA on its every layer (`ALL`)."""
    b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
    wan_base(b, fmt)
    write_lora(lo, ALL, **lora)
    return b, lo


def analysed(b: Path, lo: Path, runtime: str, strength: float = 1.0) -> Any:
    """`quantcheck lora`'s analysis of the pair for `runtime`, with figures."""
    with load_checkpoint([str(b)]) as base, load_checkpoint([str(lo)], read_markers=False) as lora:
        return analyse(base, [lora], strength, numbers=True, runtimes=(runtime,))


def lora_delta(lora: dict[str, Any], p: str, strength: float) -> np.ndarray:
    """s·ΔW of kohya module `p`, in float64 (the reference both sides approximate)."""
    x = "lora_unet_" + p.replace(".", "_")
    up = lora[x + ".lora_up.weight"].double().numpy()
    down = lora[x + ".lora_down.weight"].double().numpy()
    alpha = lora.get(x + ".alpha")
    scale = float(alpha) / down.shape[0] if alpha is not None else 1.0
    return up @ down * scale * strength


def same_figures(ours: dict[str, Any], theirs: dict[str, float], what: str) -> None:
    """quantcheck's figures of a layer are the runtime's (within `TOLERANCE`)."""
    assert abs(ours["retention"] - theirs["retention"]) <= TOLERANCE["retention"], (
        what,
        ours,
        theirs,
    )
    rel = abs(ours["added_error"] - theirs["added_error"]) / max(theirs["added_error"], 1e-12)
    assert rel <= TOLERANCE["added_error"], (what, ours, theirs)
