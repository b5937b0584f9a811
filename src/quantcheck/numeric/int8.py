"""int8_tensorwise: scalar, row-wise ([N,1]) and ConvRot (rotated, row-wise) variants.

Quantize: stored scale ``max(F32(amax)/127, 1e-30)``; the division uses that scale rounded to
the input dtype and the quotient is rounded to it before round-half-even (spec §6.1). ConvRot
rotates first with our fixed-order :func:`.hadamard.rotate` (comfy-kitchen: within the
any-order bound, see the package docstring); scalar and row-wise are bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quantcheck.formats.codecs import register_codec

from .errors import NumericError
from .hadamard import block_rows, check_group, rotate
from .lowp import (
    F32,
    abs_max,
    all_patterns,
    bits16,
    kind_of,
    lut_map,
    round_to,
    row_step,
    smallest_normal,
    to_f32,
)
from .parallel import for_each


def _scale_for_math(s: np.ndarray, kind: str) -> np.ndarray:
    sm = round_to(np.array(s, dtype=np.float32, copy=True), kind)
    sm[sm == 0] = smallest_normal(kind)
    return sm


def _codes(
    x: np.ndarray,
    sm: np.ndarray | np.float32,
    kind: str,
    inplace: bool = False,
    noise: np.ndarray | None = None,
) -> np.ndarray:
    """Codes of `x / sm`: round half to even, or with `noise` (U[0, 1) per element, F32)
    floor(x / sm + noise): comfy-kitchen's stochastic rounding."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        y = np.divide(x, sm, out=x if inplace else None)
        round_to(y, kind, out=y)
        if noise is None:
            np.rint(y, out=y)
        else:
            np.add(y, noise, out=y)
            round_to(y, kind, out=y)
            np.floor(y, out=y)
        np.clip(y, -128, 127, out=y)
        return y.astype(np.int8)


def _check(amax: np.ndarray) -> None:
    if not np.isfinite(amax).all():
        raise NumericError(
            "int8_tensorwise: weight contains NaN/Inf; comfy-kitchen would store NaN"
        )


def _scale(amax: np.ndarray) -> np.ndarray:
    return np.maximum(np.asarray(amax, np.float32) / F32(127), F32(1e-30)).astype(np.float32)


def quantize(
    w: np.ndarray,
    per_row: bool = False,
    convrot: bool = False,
    convrot_groupsize: int = 256,
    noise: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Weight [N, K] -> (I8 codes, F32 scale ``[]`` or ``[N, 1]``). ConvRot implies per-row.
    `noise` [N, K] (U[0, 1)): stochastic rounding (a re-quantized LoRA patch)."""
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"int8_tensorwise expects a 2-D weight, got shape {w.shape}")
    n, k = w.shape
    q = np.empty((n, k), np.int8)
    if convrot:
        g = check_group(convrot_groupsize)
        if k % g:
            raise NumericError(f"int8 ConvRot: K={k} is not divisible by convrot_groupsize {g}")
        scales = np.empty((n, 1), np.float32)

        def work_rot(rows: slice) -> None:
            x = rotate(w[rows], g, kind)
            amax = np.max(np.abs(x), axis=1, keepdims=True)
            _check(amax)
            scales[rows] = s = _scale(amax)
            nz = None if noise is None else noise[rows]
            q[rows] = _codes(x, _scale_for_math(s, kind), kind, inplace=True, noise=nz)

        for_each(work_rot, n, block_rows(k))
        return q, scales
    if per_row:
        amax = abs_max(w, axis=1).reshape(n, 1)
        _check(amax)
        s = _scale(amax)
        sm = _scale_for_math(s, kind)

        def work_row(rows: slice) -> None:
            nz = None if noise is None else noise[rows]
            q[rows] = _codes(to_f32(w[rows], copy=True), sm[rows], kind, inplace=True, noise=nz)

        for_each(work_row, n, row_step(k))
        return q, s
    amax = abs_max(w)
    _check(amax)
    s = _scale(amax).reshape(())
    sm = _scale_for_math(s, kind)
    u = bits16(w) if noise is None else None
    if u is not None:  # one code per BF16/F16 pattern: a 64K-entry table
        lut = _codes(all_patterns(kind).copy(), sm, kind)
        return lut_map(lut, u, out=q), s
    step = row_step(k)
    for r in range(0, n, step):
        nz = None if noise is None else noise[r : r + step]
        q[r : r + step] = _codes(w[r : r + step].copy(), sm, kind, noise=nz)
    return q, s


def dequantize(
    q: np.ndarray,
    scale: np.ndarray,
    convrot: bool = False,
    convrot_groupsize: int = 256,
    out_dtype: str = "float32",
) -> np.ndarray:
    """``q * scale`` in F32 (scale ``[]``, ``[1]``, ``[N,1]`` or ``[N]``), then rotate back."""
    s = np.asarray(scale, dtype=np.float32)
    n = q.shape[0]
    if s.size == 1:
        s = s.reshape(())
    elif s.size == n:
        s = s.reshape(n, 1)
    else:
        raise NumericError(f"int8 weight_scale shape {s.shape} fits neither [] nor [{n}, 1]")
    if not convrot:
        out = np.empty(q.shape, np.float32)

        def work_plain(rows: slice) -> None:
            np.multiply(q[rows], s if s.ndim == 0 else s[rows], out=out[rows], dtype=np.float32)

        for_each(work_plain, n, row_step(q.shape[1]))
        return _cast_out(out, out_dtype)
    g = check_group(convrot_groupsize)
    out = np.empty(q.shape, np.float32)

    def work(rows: slice) -> None:
        x = np.multiply(q[rows], s if s.ndim == 0 else s[rows], dtype=np.float32)
        rotate(x, g, "f32", out=out[rows])

    for_each(work, n, block_rows(q.shape[1]))
    return _cast_out(out, out_dtype)


def _cast_out(x: np.ndarray, out_dtype: str) -> np.ndarray:
    if out_dtype == "float32":
        return x
    return round_to(x, {"bfloat16": "bf16", "float16": "f16"}[out_dtype])


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    q, s = quantize(w, bool(o["per_row"]), bool(o["convrot"]), int(o["convrot_groupsize"]))
    return {"weight": q, "weight_scale": s}


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(
        t["weight"].view(np.int8),
        t["weight_scale"],
        bool(o["convrot"]),
        int(o["convrot_groupsize"]),
        out_dtype,
    )


register_codec("int8_tensorwise", quantize=_quantize_layer, dequantize=_dequantize_layer)
