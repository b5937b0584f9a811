"""musubi-tuner 0.3.6 and MiniMax H3's DiT: what its loader reads of the header (QC766).

`load_h3_transformer` (kohya-ss/musubi-tuner 0.3.6 `minimax_h3/model.py`) classifies the file
from its header before a tensor is loaded (`classify_h3_transformer`): tensor names with
`.weight_scale` read as `.scale_weight` must be unique; a pruned file (with `adaln_t_table`) must
have that table F32 [1025, 8], no time embedder, and every AdaLN projection taking 8 inputs; a
full file is read from the header's `__metadata__` (`parse_h3_transformer_config`): no other
entry may name fp8 or nvfp4 (nor convrot, int8 or "quantized" when the file has no
.comfy_quant tensor), and `config` must be JSON holding the published transformer config. The
values are runtimes/musubi.py's data.

Standard library only (the check path imports it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.rules import codes as R
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.musubi import (
    H3_BLOCKED_WORDS,
    H3_CONFIG,
    H3_PRUNED_ADALN,
    H3_PRUNED_BLOCKS,
    H3_PRUNED_TABLE,
)

SAYS = "musubi 0.3.6's MiniMax H3 loader raises"


def findings(ck: Checkpoint) -> Iterator[Diagnostic]:
    """QC766 for a file of the MiniMax H3 DiT family (checks.py asks only for one)."""
    why = _duplicate(ck) or (_pruned(ck) if H3_PRUNED_TABLE[0] in ck.tensors else _full(ck))
    if why:
        yield Diagnostic(
            R.QC766,
            f'{SAYS} "{why}" before it loads a tensor',
            file=next(iter(ck.tensors.values())).file,
            effects=_eff(musubi=Effect.FAILS),
        )


def _duplicate(ck: Checkpoint) -> str:
    seen: set[str] = set()
    for name in ck.tensors:
        key = (
            name[: -len("weight_scale")] + "scale_weight"
            if name.endswith(".weight_scale")
            else name
        )
        if key in seen:
            return f"Duplicate MiniMax-H3 tensor header {key!r}"
        seen.add(key)
    return ""


def _pruned(ck: Checkpoint) -> str:
    t = ck.tensors
    name, dtype, shape = H3_PRUNED_TABLE
    if any(k.startswith("time_embedder.") for k in t):
        return "MiniMax-H3 checkpoint has mixed adaln_t_table and time_embedder structures"
    if t[name].dtype != dtype:
        return f"Pruned MiniMax-H3 {name} must be {dtype}, got {t[name].dtype}"
    if t[name].shape != shape:
        return f"Pruned MiniMax-H3 {name} must have shape [1025, 8], got {t[name].shape}"
    width = shape[1]
    for pattern, out in H3_PRUNED_ADALN.items():
        blocks = range(H3_PRUNED_BLOCKS) if "{i}" in pattern else (0,)
        for i in blocks:
            prefix = pattern.format(i=i)
            for key, want in ((f"{prefix}.weight", (out, width)), (f"{prefix}.bias", (out,))):
                found = t.get(key)
                if found is None:
                    return f"Pruned MiniMax-H3 checkpoint is missing {key}"
                if found.shape != want:
                    return f"Pruned MiniMax-H3 {key} expected shape {want}, got {found.shape}"
    return ""


def _full(ck: Checkpoint) -> str:
    meta = ck.metadata
    marked = any(k.endswith(".comfy_quant") for k in ck.tensors)
    text = " ".join(f"{k}={v}" for k, v in meta.items() if k != "config").lower()
    words = [w for w in H3_BLOCKED_WORDS[0 if marked else 1] if w in text]
    if words:
        return (
            "Unsupported quantized MiniMax-H3 checkpoint. ConvRot INT8 checkpoints are detected "
            f"from their tensor structure ... (the metadata names {', '.join(words)})"
        )
    raw = meta.get("config")
    if raw is None:
        return "MiniMax-H3 transformer checkpoint is missing config metadata"
    try:
        transformer = json.loads(raw)["transformer"]
    except (ValueError, KeyError, TypeError):
        return "MiniMax-H3 transformer checkpoint has invalid config metadata"
    if not isinstance(transformer, dict):
        return "MiniMax-H3 transformer config must be an object"
    for field, expected in H3_CONFIG.items():
        if field not in transformer:
            return f"MiniMax-H3 transformer config is missing {field}"
        if transformer[field] != expected:
            return (
                f"MiniMax-H3 transformer config {field} expected {expected}, got "
                f"{transformer[field]}"
            )
    if transformer.get("adaln_curve_grid") is not None:
        return "Pruned MiniMax-H3 AdaLN must be classified from its tensor structure"
    return ""
