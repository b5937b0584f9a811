"""Layers with real numbers (made by the numeric quantizer) for the unsafe-fix tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.numeric import quantize
from quantcheck.numeric.arrays import to_bytes


def weight(n: int, k: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, k)) * 0.05).astype(ml_dtypes.bfloat16)


def raw(name: str, a: np.ndarray, dtype: str) -> RawTensor:
    return RawTensor(name, dtype, tuple(a.shape), to_bytes(a))


def quantized(
    prefix: str,
    w: np.ndarray,
    fmt: str,
    marker: dict[str, Any] | None = None,
    bias: bool = False,
    **opts: Any,
) -> list[RawTensor]:
    q = quantize(w, fmt, **opts)
    out = [raw(f"{prefix}.{s}", a, d) for s, (d, a) in q.tensors.items()]
    if bias:
        b = np.zeros(w.shape[0], ml_dtypes.bfloat16)
        out.append(raw(f"{prefix}.bias", b, "BF16"))
    out.append(marker_tensor(prefix, marker if marker is not None else q.marker))
    return out


def plain(prefix: str, w: np.ndarray) -> list[RawTensor]:
    return [raw(f"{prefix}.weight", w, "BF16")]


def write(path: Path, *layers: list[RawTensor]) -> Path:
    write_safetensors(path, [t for la in layers for t in la])
    return path
