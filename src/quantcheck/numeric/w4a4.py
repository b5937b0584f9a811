"""convrot_w4a4: ConvRot-rotated weight, signed int4 (-7..7, low nibble first), F32 scale [N].

Quantize in the input dtype: ``a = max(rowamax|W_rot|, dtype(1e-10))``, ``s = dtype(a/7)``,
``q = clip(rint(dtype(W_rot/s)), -7, 7)``. Dequantize: ``(q * s)`` rotated back per group in
F32. Rotations are our fixed-order :func:`.hadamard.rotate` (comfy-kitchen: within the
any-order bound, see the package docstring).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quantcheck.formats.codecs import register_codec
from quantcheck.formats.table import CONVROT_GS

from .errors import NumericError
from .hadamard import block_rows, check_group, rotate
from .lowp import F32, kind_of, round_scalar, round_to
from .nibbles import pack_lo_first, unpack_signed_lo_first
from .parallel import for_each

QUANT_GROUP = 64


def _check_k(k: int, cg: int) -> None:
    if k % QUANT_GROUP or k % cg:
        raise NumericError(
            f"convrot_w4a4 needs K divisible by {QUANT_GROUP} and convrot_groupsize {cg}, got K={k}"
        )


def quantize(
    w: np.ndarray, convrot_groupsize: int = CONVROT_GS.default, noise: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Weight [N, K] -> (I8 [N, K/2] packed signed int4, F32 scale [N]). `noise` [N, K]
    (U[0, 1)): comfy-kitchen's stochastic rounding, floor(W_rot / s + noise)."""
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"convrot_w4a4 expects a 2-D weight, got shape {w.shape}")
    cg = check_group(convrot_groupsize)
    _check_k(w.shape[1], cg)
    n, k = w.shape
    packed = np.empty((n, k // 2), np.int8)
    scales = np.empty(n, np.float32)
    tiny = round_scalar(1e-10, kind)

    def work(rows: slice) -> None:
        x = rotate(w[rows], cg, kind)
        amax = np.max(np.abs(x), axis=1, keepdims=True)
        if not np.isfinite(amax).all():
            raise NumericError(
                "convrot_w4a4: weight contains NaN/Inf; comfy-kitchen would store NaN"
            )
        s = round_to(np.maximum(amax, tiny) / F32(7), kind)
        y = x / s
        round_to(y, kind, out=y)
        if noise is None:
            np.rint(y, out=y)
        else:
            np.add(y, noise[rows], out=y)
            round_to(y, kind, out=y)
            np.floor(y, out=y)
        np.clip(y, -7, 7, out=y)
        packed[rows] = pack_lo_first(y.astype(np.int8))
        scales[rows] = s[:, 0]

    for_each(work, n, block_rows(k))
    return packed, scales


def dequantize(
    packed: np.ndarray,
    scale: np.ndarray,
    convrot_groupsize: int = CONVROT_GS.default,
    out_dtype: str = "float32",
) -> np.ndarray:
    """[N, K] weight: unpack, multiply by the row scale, rotate back in F32, then cast."""
    cg = check_group(convrot_groupsize)
    n = packed.shape[0]
    s = np.asarray(scale, dtype=np.float32).reshape(-1)
    if s.size != n:
        raise NumericError(f"convrot_w4a4 weight_scale has {s.size} values for {n} rows")
    k = packed.shape[1] * 2
    _check_k(k, cg)
    out = np.empty((n, k), np.float32)

    def work(rows: slice) -> None:
        q = unpack_signed_lo_first(packed[rows]).astype(np.float32)
        q *= s[rows, None]
        rotate(q, cg, "f32", out=out[rows])

    for_each(work, n, block_rows(k))
    if out_dtype == "float32":
        return out
    return round_to(out, {"bfloat16": "bf16", "float16": "f16"}[out_dtype])


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    if o["linear_dtype"] not in (None, "int4", "int8"):
        raise NumericError(
            f"convrot_w4a4: linear_dtype must be 'int4' or 'int8', got {o['linear_dtype']!r}"
        )
    q, s = quantize(w, int(o["convrot_groupsize"]))
    return {"weight": q, "weight_scale": s}


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(
        t["weight"].view(np.int8), t["weight_scale"], int(o["convrot_groupsize"]), out_dtype
    )


register_codec("convrot_w4a4", quantize=_quantize_layer, dequantize=_dequantize_layer)
