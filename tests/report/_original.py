"""A stand-in "original" for an example checkpoint: its dequantized weights plus noise of a
different size per layer, written as F32, so `--compare` has errors worth drawing."""

from __future__ import annotations

import warnings
from pathlib import Path


def make_original(quantized: Path, out: Path, seed: int = 7) -> Path:
    """Write the original of `quantized` to `out` (needs numpy)."""
    import numpy as np

    from quantcheck.io.build import RawTensor, write_safetensors
    from quantcheck.model.checkpoint import load_checkpoint

    rng = np.random.default_rng(seed)
    tensors = []
    with load_checkpoint([str(quantized)]) as ck, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (prefix, layer) in enumerate(ck.layers.items()):
            if layer.weight is None:
                continue
            w = np.asarray(ck.layer(prefix).dequantize(), dtype=np.float32)
            scale = float(np.abs(w).mean() or 1.0) * 10 ** (-3 + 2.5 * ((i * 7) % 11) / 10)
            w = w + rng.normal(0.0, scale, w.shape).astype(np.float32)
            tensors.append(
                RawTensor(f"{prefix}.weight", "F32", tuple(w.shape), w.astype("<f4").tobytes())
            )
    write_safetensors(out, tensors)
    return out
