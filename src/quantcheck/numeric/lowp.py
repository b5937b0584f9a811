"""Arithmetic "in the input dtype" the way torch's CPU kernels do it.

torch computes an op on BF16/F16 tensors in F32 and rounds the result once to the tensor
dtype. We keep every value in an F32 container and call :func:`round_to` after each op.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import NumericError

F32 = np.float32
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)

# Working-dtype tags: the dtype the quantizer computes in.
KINDS = ("bf16", "f16", "f32")


def kind_of(array: np.ndarray) -> str:
    """The working dtype tag of an input weight; refuses anything but F32/F16/BF16."""
    dt = array.dtype
    if dt == BF16:
        return "bf16"
    if dt == F16:
        return "f16"
    if dt == np.float32:
        return "f32"
    raise NumericError(f"weights must be float32, float16 or bfloat16, got {dt}")


def to_f32(array: np.ndarray, copy: bool = False) -> np.ndarray:
    """F32 values of ``array`` (a new array if ``copy`` or if it is not F32 already)."""
    if array.dtype == np.float32:
        return array.copy() if copy else array
    if array.dtype == BF16:
        u = np.ascontiguousarray(array).view(np.uint16)
        return np.left_shift(u, 16, dtype=np.uint32).view(np.float32)
    return array.astype(np.float32)


def round_to(x: np.ndarray, kind: str, out: np.ndarray | None = None) -> np.ndarray:
    """Round F32 values to ``kind`` (RNE) and return them as F32 (in place if ``out is x``)."""
    if x.ndim == 0:
        r = round_to(x.reshape(1), kind).reshape(())
        if out is not None:
            out[...] = r
            return out
        return r
    if kind == "f32":
        if out is not None and out is not x:
            out[...] = x
            return out
        return x
    if kind == "f16":
        r = x.astype(np.float16).astype(np.float32)
        if out is not None:
            out[...] = r
            return out
        return r
    # bf16: add 0x7FFF plus the lowest kept bit, then truncate. NaN never reaches here.
    if out is None:
        out = x.copy()
    elif out is not x:
        out[...] = x
    u = out.view(np.uint32)
    t = np.right_shift(u, 16)
    np.bitwise_and(t, 1, out=t)
    t += 0x7FFF
    u += t
    u &= 0xFFFF0000
    return out


def round_scalar(value: float | np.float32, kind: str) -> np.float32:
    """Round one F32 value to ``kind``, returned as F32."""
    return F32(round_to(np.array([value], F32), kind)[0])


def from_f32(x: np.ndarray, kind: str) -> np.ndarray:
    """Convert F32 values (already representable) to the array dtype named by ``kind``."""
    if kind == "f32":
        return x.astype(np.float32, copy=False)
    if kind == "f16":
        return x.astype(np.float16)
    return (
        (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) >> 16)
        .astype(np.uint16)
        .view(BF16)
    )


def smallest_normal(kind: str) -> np.float32:
    """``torch.finfo(dtype).tiny`` of the working dtype, as F32."""
    return {"bf16": F32(2.0**-126), "f32": F32(2.0**-126), "f16": F32(2.0**-14)}[kind]


# --------------------------------------------------------------------------- speed helpers

CHUNK_ELEMS = 1 << 17  # rows per chunk are chosen so a chunk's F32 copy stays in L2


def row_step(k: int, multiple: int = 1) -> int:
    """Rows per chunk for a row length ``k`` (a multiple of ``multiple``)."""
    rows = max(1, CHUNK_ELEMS // max(k, 1))
    return max(multiple, rows // multiple * multiple)


def bits16(w: np.ndarray) -> np.ndarray | None:
    """The uint16 bit patterns of a BF16/F16 array (None for F32)."""
    return w.view(np.uint16) if w.dtype in (BF16, F16) else None


_PATTERNS: dict[str, np.ndarray] = {}


def all_patterns(kind: str) -> np.ndarray:
    """F32 values of all 65536 BF16 or F16 bit patterns (NaN patterns included)."""
    if kind not in _PATTERNS:
        p = np.arange(65536, dtype=np.uint16).view(BF16 if kind == "bf16" else F16)
        _PATTERNS[kind] = p.astype(np.float32)
    return _PATTERNS[kind]


def lut_map(lut: np.ndarray, u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``lut[u]`` for integer patterns ``u`` [N, K], chunked (and threaded) over rows."""
    from .parallel import for_each

    if out is None:
        out = np.empty(u.shape, lut.dtype)

    def work(rows: slice) -> None:
        np.take(lut, u[rows], out=out[rows], mode="clip")  # in range: no bounds checks

    for_each(work, u.shape[0], row_step(u.shape[1]))
    return out


def abs_max(w: np.ndarray, axis: int | None = None) -> np.ndarray:
    """max |w| (whole array or per row), as F32; NaN if any NaN/Inf is present."""
    u = bits16(w)
    if u is None:
        m = np.max(np.abs(w), axis=axis)
        return (
            np.asarray(m, np.float32)
            if np.isfinite(m).all()
            else np.asarray(np.where(np.isfinite(m), m, np.nan), np.float32)
        )
    kind = "bf16" if w.dtype == BF16 else "f16"
    limit = 0x7F80 if kind == "bf16" else 0x7C00  # magnitude bits of +inf
    n, k = u.shape
    step = row_step(k)
    if axis is None:
        m = 0
        for r in range(0, n, step):
            m = max(m, int(np.max(u[r : r + step] & 0x7FFF)))
        return np.asarray(np.nan if m >= limit else all_patterns(kind)[m], np.float32)  # 0-d
    mags = np.empty(n, np.uint16)
    for r in range(0, n, step):
        np.max(u[r : r + step] & 0x7FFF, axis=1, out=mags[r : r + step])
    vals = all_patterns(kind)[mags]
    vals[mags >= limit] = np.nan
    return vals


def last_axis_reduce(x: np.ndarray, op: np.ufunc = np.maximum) -> np.ndarray:
    """``op.reduce(x, axis=-1, keepdims=True)`` by pairwise halving (element i meets element
    i + h, h = half the length; an odd last element joins element 0), any length.

    For max/min it equals numpy's reduction and is faster along a short last axis; for
    ``np.add`` it is a sum in an order this code fixes (never numpy's or BLAS's)."""
    while x.shape[-1] > 1:
        h = x.shape[-1] // 2
        odd = x.shape[-1] % 2
        y = op(x[..., :h], x[..., h : 2 * h])
        if odd:
            y[..., :1] = op(y[..., :1], x[..., 2 * h :])
        x = y
    return x


def fixed_sum(x: np.ndarray) -> float:
    """Sum of a 1-D array in the fixed pairwise order of :func:`last_axis_reduce` (in the
    array's dtype; float64 arrays give a float64 sum)."""
    if x.size == 0:
        return 0.0
    return float(last_axis_reduce(np.asarray(x).reshape(-1), np.add)[0])
