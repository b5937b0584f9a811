"""asym_w4a8_int8: grouped 4-bit (codebook / uniform / asymmetric) or 6-bit codes on a
ConvRot-rotated weight, decoded in two stages through an int8 grid (spec §3.6, §6.4-6.5).

Quantize (comfy-kitchen's eager algorithm, every sum in our fixed order): rotate in the input
dtype (:func:`.hadamard.rotate`), then F32; codebook choice by a kurtosis gate (fixed
Lloyd-Max LUT or a fitted 16-level table); 2 ALS passes; ``s_channel``/``s_rel``; codes
re-assigned against the decoded int8 grid; 6-bit searches the fp8 neighbours of ``s_rel``.
ALS and 6-bit error sums are pairwise (:func:`_sum_groups`), the gate's moments use
:func:`.lowp.fixed_sum`, cluster means float64 sums in sample order. Against comfy-kitchen
(which sums in its machine's order): see the numeric contract in the package docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from quantcheck.formats.codecs import register_codec

from .errors import NumericError
from .hadamard import block_rows, check_group, rotate
from .lowp import F32, abs_max, fixed_sum, kind_of, last_axis_reduce, round_to, to_f32
from .nibbles import pack6, pack_lo_first, unpack6, unpack_lo_first
from .parallel import for_each
from .torch_order import linspace_f32, torch_quantile, torch_randint

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
FIXED_LUT = np.array(
    [
        -0.980602,
        -0.794529,
        -0.638165,
        -0.500986,
        -0.377321,
        -0.263187,
        -0.155210,
        -0.050720,
        0.052541,
        0.156985,
        0.265284,
        0.379533,
        0.502636,
        0.638953,
        0.794876,
        0.980671,
    ],
    np.float32,
)
W6_TABLE = np.arange(-31, 32, dtype=np.float32)
_GATE_KURTOSIS = -0.1
_KURTOSIS_SAMPLE = 1 << 19
_FIT_SAMPLE = 300000
_SAMPLE_ELEMS = 1 << 22
_ALS_ITERS = 2
_HEAVY_CHUNK = 1 << 15  # elements per row chunk: codebook / 6-bit searches
_LIGHT_CHUNK = 1 << 17  # uniform / asymmetric
_EPS = F32(1e-8)


def check_layout(k: int, group_size: int, convrot_groupsize: int, bits: int) -> None:
    """The shape rules comfy-kitchen enforces for W4A8/W6A8."""
    g, cg = int(group_size), int(convrot_groupsize)
    check_group(cg)
    if bits not in (4, 6):
        raise NumericError(f"asym_w4a8_int8: bits must be 4 or 6, got {bits}")
    if g < 4 or (16 % g and g % 16):
        raise NumericError(
            f"asym_w4a8_int8: group_size {g} must be >= 4 and divide or be a multiple of 16"
        )
    if k % 16 or k % g or k % cg:
        raise NumericError(
            f"asym_w4a8_int8: K={k} must be divisible by 16, group_size {g} "
            f"and convrot_groupsize {cg}"
        )
    if bits == 6 and (k % 32 or g % 16):
        raise NumericError(
            "asym_w4a8_int8: 6-bit needs K % 32 == 0 and group_size a multiple of 16"
        )


# --------------------------------------------------------------------------- codebook choice


def _normalized_groups(rot: np.ndarray, g: int) -> np.ndarray:
    """``rot`` (overwritten) divided per group by ``max(amax, 1e-8)``, in row chunks."""
    n, k = rot.shape
    step = max(1, (1 << 17) // max(k, 1))
    for r in range(0, n, step):
        grouped = rot[r : r + step].reshape(-1, k // g, g)
        grouped /= np.maximum(last_axis_reduce(np.abs(grouped)), _EPS)
    return rot.reshape(n, k // g, g)


def _fit(samples: np.ndarray, levels: int, iterations: int) -> np.ndarray:
    """k-means (Lloyd) on the drawn samples, initialised at quantiles.

    Samples are assigned in slices; cluster sums accumulate in float64 in sample order
    (``np.add.at``, the same sequence of additions as ``np.bincount(weights=...)``)."""
    samples = samples.astype(np.float32, copy=False)
    # stable: -0.0 and +0.0 keep their sample order (a SIMD sort may order equal keys freely)
    cb = torch_quantile(np.sort(samples, kind="stable"), linspace_f32(0.0, 1.0, levels))
    step = (1 << 17) // levels  # [step, levels] distances at a time (512 KiB)
    for _ in range(iterations):
        counts = np.zeros(levels, np.int64)
        sums = np.zeros(levels, np.float64)
        for r in range(0, samples.size, step):
            part = samples[r : r + step]
            d = part[:, None] - cb[None, :]
            assign = np.argmin(np.abs(d, out=d), axis=1)
            del d
            counts += np.bincount(assign, minlength=levels)
            np.add.at(sums, assign, part.astype(np.float64))
        new = cb.copy()
        nz = counts > 0
        new[nz] = sums[nz].astype(np.float32) / counts[nz].astype(np.float32)
        cb = new
    return cb


def fit_codebook(normalized: np.ndarray, levels: int = 16, iterations: int = 25) -> np.ndarray:
    """k-means (Lloyd) codebook on up to 300000 sampled values, initialised at quantiles."""
    samples = normalized.ravel()
    if samples.size > _FIT_SAMPLE:
        samples = samples[torch_randint(samples.size, _FIT_SAMPLE, 0)]
    return _fit(samples, levels, iterations)


def _excess_kurtosis(fill: Callable[[np.ndarray], object], size: int) -> float:
    """``mean(((x - mean) / (std(ddof=1) + 1e-9))**4) - 3`` in float64 for the ``size``
    values that ``fill(out)`` writes into a float64 array.

    Every sum is :func:`fixed_sum` (a pairwise order our code fixes), the fourth power is
    ``(y·y)·(y·y)`` and the square root is IEEE ``sqrt``: no numpy reduction or transcendental
    ufunc whose result could depend on the CPU. One float64 array: ``x`` is filled a second
    time instead of copied."""
    x = np.empty(size, np.float64)
    fill(x)
    mean = fixed_sum(x) / size
    std = 0.0
    if size > 1:
        np.subtract(x, mean, out=x)
        np.multiply(x, x, out=x)
        std = float(np.sqrt(fixed_sum(x) / (size - 1)))
        fill(x)
    np.subtract(x, mean, out=x)
    np.divide(x, std + 1e-9, out=x)
    np.multiply(x, x, out=x)
    np.multiply(x, x, out=x)
    return fixed_sum(x) / size - 3.0


def excess_kurtosis(values: np.ndarray) -> float:
    """The gate statistic of a 1-D sample (see :func:`_excess_kurtosis`)."""
    return _excess_kurtosis(lambda out: np.copyto(out, values, casting="unsafe"), values.size)


def _gate_values(
    x: np.ndarray,
    rows: np.ndarray | None,
    kind: str,
    g: int,
    cg: int,
    picks: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Values of the rotated, group-normalized gate sample (``x[rows]``, or all of ``x``) at
    the flat positions ``picks`` in that order (every value if None), into ``out`` (F32 if
    not given).

    Rotation and normalization are per row, so the sample is built in row chunks and only the
    picked values are kept: the full rotated sample never exists."""
    m, k = (x.shape[0] if rows is None else rows.size), x.shape[1]
    step = max(1, _HEAVY_CHUNK // max(k, 1))
    span = step * k
    size = m * k if picks is None else picks.size
    if out is None:
        out = np.empty(size, np.float32)
    chunk_of = None
    if picks is not None:  # chunk index of every pick (uint16: a sample has few chunks)
        chunk_of = np.empty(picks.size, np.uint16 if m // step < 65535 else np.int64)
        for r in range(0, picks.size, 1 << 16):
            chunk_of[r : r + (1 << 16)] = picks[r : r + (1 << 16)] // span

    def work(sl: slice) -> None:
        src = x[sl] if rows is None else x[rows[sl]]
        flat = _normalized_groups(rotate(src, cg, kind), g).reshape(-1)
        first = sl.start * k
        if chunk_of is None or picks is None:  # both or neither
            out[first : first + flat.size] = flat
            return
        sel = np.flatnonzero(chunk_of == sl.start // step)
        out[sel] = flat[picks[sel] - first]

    for_each(work, m, step)
    return out


def _draw(total: int, size: int) -> np.ndarray:
    return torch_randint(total, size, 0, np.int32 if total <= 2**31 else np.int64)


def decide_codebook(x: np.ndarray, kind: str, g: int, cg: int) -> np.ndarray:
    """One table for the whole tensor from an evenly strided row sample (as comfy-kitchen).

    The sample (up to 2^22 values) is rotated and normalized in row chunks and never held:
    small samples are recomputed for each use, large ones keep only the 2^19 kurtosis
    draws (F32) and, if a table is fitted, a second pass draws the 300000 fit values."""
    n, k = x.shape
    max_rows = max(1, _SAMPLE_ELEMS // max(k, 1))
    rows = linspace_f32(0, n - 1, max_rows).astype(np.int64) if n > max_rows else None
    total = (n if rows is None else rows.size) * k
    if total <= _KURTOSIS_SAMPLE:  # the kurtosis sees every value
        kurt = _excess_kurtosis(lambda out: _gate_values(x, rows, kind, g, cg, None, out), total)
        if kurt <= _GATE_KURTOSIS:
            return FIXED_LUT.copy()
        picks = None if total <= _FIT_SAMPLE else _draw(total, _FIT_SAMPLE)
        return _fit(_gate_values(x, rows, kind, g, cg, picks), 16, 25)
    values = _gate_values(x, rows, kind, g, cg, _draw(total, _KURTOSIS_SAMPLE))
    kurt = excess_kurtosis(values)
    del values
    if kurt <= _GATE_KURTOSIS:
        return FIXED_LUT.copy()
    return _fit(_gate_values(x, rows, kind, g, cg, _draw(total, _FIT_SAMPLE)), 16, 25)


# --------------------------------------------------------------------------- assignment
#
# Level indices are kept as uint8 (tables have at most 63 entries); a gather (np.take, which
# is much faster than fancy indexing with a small index dtype) widens them to int64 only for
# the moment it runs, on one chunk (see _HEAVY_CHUNK).


def _index_dtype(levels: int) -> type:
    return np.uint8 if levels < 256 else np.int64


def _gather(table_rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``table_rows[b, idx[b, j]]`` for tables [B, L] and indices [B, g]."""
    b, n_lv = table_rows.shape
    flat_idx = np.arange(0, b * n_lv, n_lv, dtype=np.int64)[:, None] + idx
    return table_rows.reshape(-1).take(flat_idx)


def searchsorted_rows(
    table: np.ndarray, t: np.ndarray, guess: np.ndarray | None = None
) -> np.ndarray:
    """Per row b: number of entries of sorted ``table[b]`` that are < ``t[b, :]``.

    Short tables are counted directly; with a ``guess`` the count is walked from it to the
    exact answer (entries that are NaN never count and stop the walk).
    """
    _b, n_lv = table.shape
    dt = _index_dtype(n_lv + 1)
    if guess is None:
        pos: np.ndarray = np.zeros(t.shape, dt)
        with np.errstate(invalid="ignore"):
            for j in range(n_lv):
                pos += t > table[:, j : j + 1]
        return pos
    pos = np.clip(guess, 0, n_lv).astype(dt, copy=False)
    with np.errstate(invalid="ignore"):
        for _ in range(n_lv + 1):
            up = _gather(table, np.minimum(pos, n_lv - 1)) < t
            up &= pos < n_lv
            below = np.maximum(pos, 1)
            below -= 1
            down = _gather(table, below) >= t
            down &= pos > 0
            if not (up.any() or down.any()):
                break
            pos += up
            pos -= down
    return pos


_BUCKETS: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}


def _bucket_table(codebook: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each top-16-bit F32 bucket: entries < every value in it, or 255 if ambiguous."""
    key = codebook.tobytes()
    if key not in _BUCKETS:
        reps = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
        with np.errstate(invalid="ignore"):
            base = (codebook[None, :] < reps[:, None]).sum(axis=1).astype(np.uint8)
        inside = codebook.view(np.uint32) >> 16
        base[inside] = 255
        # -0.0 and +0.0 compare equal: treat both zero buckets as ambiguous
        base[0x0000] = base[0x8000] = 255
        _BUCKETS[key] = (base, codebook.copy())
        if len(_BUCKETS) > 8:
            _BUCKETS.pop(next(iter(_BUCKETS)))
    return _BUCKETS[key]


def count_less(codebook: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``np.searchsorted(codebook, v, 'left')`` for F32 ``v`` via a 64K-bucket table (uint8)."""
    base, cb = _bucket_table(np.ascontiguousarray(codebook, dtype=np.float32))
    hi16 = np.ascontiguousarray(v, dtype=np.float32).view(np.uint16)[..., 1::2]
    pos = np.take(base, hi16)
    amb = np.flatnonzero(pos == 255)
    if amb.size:
        vals = v.ravel()[amb]
        pos.ravel()[amb] = (cb[None, :] < vals[:, None]).sum(axis=1)
    return pos


def _nearest(table_rows: np.ndarray, t: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """comfy-kitchen's tie rule: take ``pos`` only if strictly closer than ``pos-1``."""
    last = table_rows.shape[1] - 1
    lo = np.maximum(pos, 1)
    lo -= 1  # clip(pos - 1, 0, last): pos <= last + 1
    hi = np.minimum(pos, last)
    dlo = _gather(table_rows, lo)
    np.subtract(t, dlo, out=dlo)
    np.abs(dlo, out=dlo)
    dhi = _gather(table_rows, hi)
    np.subtract(t, dhi, out=dhi)
    np.abs(dhi, out=dhi)
    return np.where(dhi < dlo, hi, lo)


def assign_codebook(normalized: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Nearest level index (uint8) of a shared sorted codebook (at most 255 levels)."""
    pos = count_less(codebook, normalized)
    last = codebook.size - 1
    lo = np.maximum(pos, 1)
    lo -= 1  # clip(pos - 1, 0, last)
    hi = np.minimum(pos, last)
    dlo = np.take(codebook, lo)
    np.subtract(normalized, dlo, out=dlo)
    np.abs(dlo, out=dlo)
    dhi = np.take(codebook, hi)
    np.subtract(normalized, dhi, out=dhi)
    np.abs(dhi, out=dhi)
    return np.where(dhi < dlo, hi, lo)


def grid_levels(table: np.ndarray, s_rel_f32: np.ndarray) -> np.ndarray:
    """int8 values every level of every group decodes to: clip(rint(level * s_rel), ±127)."""
    with np.errstate(invalid="ignore"):
        lv = table[None, None, :] * s_rel_f32[:, :, None]
        np.rint(lv, out=lv)
        return np.clip(lv, -127, 127, out=lv)


def assign_grid(
    target: np.ndarray, levels: np.ndarray, step: np.ndarray | None = None
) -> np.ndarray:
    """Nearest decoded int8 level per element; target/levels are [n, G, g] / [n, G, L].

    ``step`` (uniform 6-bit levels ``rint(i*step)``, i = -31..31) seeds the search."""
    n, groups, g = target.shape
    lv = levels.reshape(n * groups, -1)
    t = target.reshape(n * groups, g)
    guess = None
    if step is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            est = np.ceil(t)
            est -= 0.5
            est /= step.reshape(-1, 1)
            np.floor(est, out=est)
            est += 32
            np.clip(est, 0, lv.shape[1], out=est)
            np.nan_to_num(est, copy=False, nan=0)
            guess = est.astype(_index_dtype(lv.shape[1] + 1))
            del est
    with np.errstate(invalid="ignore"):
        idx = _nearest(lv, t, searchsorted_rows(lv, t, guess))
    return idx.reshape(n, groups, g)


def _search_group_scale(
    target: np.ndarray, s_rel: np.ndarray, table: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """6-bit: per group, the s_rel among {s, two stored-dtype neighbours} with least grid error."""
    if s_rel.dtype == FP8:
        raw = s_rel.view(np.uint8)
        down = (raw - np.uint8(1)).astype(np.uint8)
        down = np.maximum(down, np.uint8(1))
        up = np.minimum((raw + np.uint8(1)).astype(np.uint8), np.uint8(0x7E))
        cands = [
            s_rel.astype(np.float32),
            down.view(FP8).astype(np.float32),
            up.view(FP8).astype(np.float32),
        ]
    else:
        base = s_rel.astype(np.float32)
        cands = [base, base * F32(0.97), base * F32(1.03)]
    best_err, best_idx = _grid_error(target, table, cands[0])
    best_scale = cands[0].copy()
    for cand in cands[1:]:
        err, idx = _grid_error(target, table, cand)
        with np.errstate(invalid="ignore"):
            better = err < best_err
        best_err = np.where(better, err, best_err)
        best_scale = np.where(better, cand, best_scale)
        np.copyto(best_idx, idx, where=better[:, :, None])
    scale = best_scale.astype(FP8) if s_rel.dtype == FP8 else best_scale.astype(np.float32)
    return scale, best_idx


def _grid_error(
    target: np.ndarray, table: np.ndarray, cand: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(per-group squared grid error, level indices) of `target` on the grid scaled by `cand`."""
    levels = grid_levels(table, cand)
    idx = assign_grid(target, levels, cand)
    with np.errstate(invalid="ignore"):
        d = _gather(levels.reshape(-1, levels.shape[2]), idx.reshape(-1, idx.shape[2]))
        del levels
        d = d.reshape(target.shape)
        d -= target
        np.multiply(d, d, out=d)
        err = _sum_groups(d)
        del d
    return err, idx


# --------------------------------------------------------------------------- quantize


def _sum_groups(a: np.ndarray) -> np.ndarray:
    """F32 sum over the last axis in the fixed pairwise order of :func:`last_axis_reduce`."""
    return last_axis_reduce(a, np.add)[..., 0]


def _round(x: np.ndarray, noise: np.ndarray | None) -> np.ndarray:
    """Round half to even, or floor(x + noise) (comfy-kitchen's stochastic rounding)."""
    if noise is None:
        return np.rint(x)
    return np.floor(x + noise)


def assign_grid_stochastic(target: np.ndarray, levels: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """comfy-kitchen's stochastic grid assignment: between the two levels bracketing each
    target (sorted per group), the upper one when the target exceeds a uniform point of the
    bracket: idx = lo + (t > level[lo] + u * (level[lo + 1] - level[lo]))."""
    n, groups, g = target.shape
    lv = levels.reshape(n * groups, -1)
    t = target.reshape(n * groups, g)
    last = lv.shape[1] - 1
    with np.errstate(invalid="ignore"):
        pos = searchsorted_rows(lv, t, None).astype(np.int64)
    lo = np.clip(pos - 1, 0, last - 1)
    level_lo = np.take_along_axis(lv, lo, axis=1)
    width = np.take_along_axis(lv, lo + 1, axis=1) - level_lo
    thr = noise.reshape(n * groups, g) * width + level_lo
    idx = np.clip(lo + (t > thr), 0, last)
    return idx.reshape(n, groups, g)


def _quantize_rotated(
    rot: np.ndarray,
    g: int,
    kind: str,
    codebook: np.ndarray | None,
    symmetric: bool,
    bits: int,
    fp8_scales: bool,
    noise: np.ndarray | None = None,
    scale_search: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows of an F32 rotated weight (overwritten) -> (codes uint8 [n, K], s_rel, s_channel,
    correction). `noise` (U[0, 1), [n, K]): comfy-kitchen's stochastic rounding of the final
    assignment; `scale_search` False: no 6-bit group-scale search (its requantize path)."""
    n, k = rot.shape
    w = rot.reshape(n, k // g, g)
    nz = None if noise is None else noise.reshape(n, k // g, g)
    correction = None
    table = W6_TABLE if bits == 6 else codebook  # the levels the codes index, if any
    if table is not None:
        v = np.abs(w)
        amax = last_axis_reduce(v)
        if bits == 6:

            def assign(v: np.ndarray) -> np.ndarray:  # overwrites v
                np.rint(v, out=v)
                np.clip(v, -31, 31, out=v)
                v += 31
                return v.astype(np.uint8)

            gs = np.maximum(amax / F32(31), _EPS)
        else:

            def assign(v: np.ndarray) -> np.ndarray:
                return assign_codebook(v, table)

            gs = np.maximum(amax, _EPS)
        del amax
        q = assign(np.divide(w, gs, out=v))
        for _ in range(_ALS_ITERS):
            lv = np.take(table, q)
            np.multiply(w, lv, out=v)
            num = _sum_groups(v)
            np.multiply(lv, lv, out=lv)
            den = np.maximum(_sum_groups(lv), _EPS)
            del lv
            gs = np.maximum(num / den, _EPS)[:, :, None]
            q = assign(np.divide(w, gs, out=v))
        shifted = np.multiply(np.take(table, q), gs, out=v)
        del q
    elif symmetric:
        gs = np.maximum(last_axis_reduce(np.abs(w)) / F32(7), _EPS)
        signed = np.clip(_round(w / gs, nz), -8, 7)
        codes = (signed + 8).astype(np.uint8)
        shifted = np.multiply(signed, gs, out=signed)
    else:
        mn = last_axis_reduce(w, np.minimum)
        gs = np.maximum((last_axis_reduce(w) - mn) / F32(15), _EPS)
        u = np.clip(_round((w - mn) / gs, nz), 0, 15)
        codes = u.astype(np.uint8)
        u -= F32(8)
        shifted = np.multiply(u, gs, out=u)
        correction = round_to((F32(8) * gs + mn)[:, :, 0], kind)
    s_channel = np.maximum(np.max(np.abs(shifted, out=shifted), axis=(1, 2)) / F32(127), _EPS)
    del shifted
    s_rel = gs[:, :, 0] / s_channel[:, None]
    if fp8_scales:
        s_rel = s_rel.astype(FP8)
        if np.isnan(s_rel.astype(np.float32)).any():
            raise NumericError("asym_w4a8_int8: a group scale overflows float8_e4m3fn")
    if table is not None:
        target = np.divide(w, s_channel[:, None, None], out=w)  # w is not needed any more
        if bits == 6 and scale_search and nz is None:
            s_rel, idx = _search_group_scale(target, s_rel, table)
            idx += 1
            codes = idx
        else:
            levels = grid_levels(table, s_rel.astype(np.float32))
            if nz is None:
                codes = assign_grid(target, levels)
            else:
                codes = assign_grid_stochastic(target, levels, nz)
            if bits == 6:
                codes = codes + 1
        codes = codes.astype(np.uint8, copy=False)
    return codes.reshape(n, k), s_rel, s_channel.astype(np.float32), correction


def quantize(
    w: np.ndarray,
    group_size: int = 16,
    convrot_groupsize: int = 256,
    codebook: bool = True,
    symmetric: bool = True,
    bits: int = 4,
    scale_dtype: str = "float8_e4m3fn",
    codebook_table: np.ndarray | None = None,
    noise: np.ndarray | None = None,
    scale_search: bool = True,
) -> dict[str, np.ndarray]:
    """Weight [N, K] -> dict with weight, weight_s_rel, weight_s_channel (+ codebook/correction).

    comfy-kitchen's requantize (a LoRA patch written back): `codebook_table` the layer's own
    codebook (no gate, no fit), `noise` [N, K] U[0, 1) its stochastic rounding, `scale_search`
    False (no 6-bit group-scale search).

    Rows are rotated, quantized and packed in chunks straight into the outputs: besides the
    outputs, memory is the gate's sample of at most 2^19 values plus per-chunk temporaries."""
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"asym_w4a8_int8 expects a 2-D weight, got shape {w.shape}")
    n, k = w.shape
    g, cg, bits = int(group_size), int(convrot_groupsize), int(bits)
    check_layout(k, g, cg, bits)
    if scale_dtype not in ("float8_e4m3fn", "float32"):
        raise NumericError("asym_w4a8_int8: scale_dtype must be float8_e4m3fn or float32")
    if bits == 6:
        if not symmetric:
            raise NumericError("asym_w4a8_int8: 6-bit storage is symmetric only")
        codebook = False
    amax = abs_max(w, axis=1)
    if not np.isfinite(amax).all():
        raise NumericError("asym_w4a8_int8: weight contains NaN/Inf; comfy-kitchen would store NaN")
    table: np.ndarray | None
    if codebook_table is not None and symmetric and codebook:
        table = np.asarray(codebook_table, dtype=np.float32).reshape(-1)
    else:
        table = decide_codebook(w, kind, g, cg) if symmetric and codebook else None
    heavy = bits == 6 or table is not None  # searches with [chunk, levels] temporaries
    rows = max(1, (_HEAVY_CHUNK if heavy else _LIGHT_CHUNK) // max(k, 1))
    fp8_scales = scale_dtype == "float8_e4m3fn"
    packed = np.empty((n, k * bits // 8), np.int8)
    s_rel = np.empty((n, k // g), FP8 if fp8_scales else np.float32)
    s_channel = np.empty(n, np.float32)
    correction = None if symmetric else np.empty((n, k // g), np.float32)

    def work(sl: slice) -> None:
        rot = rotate(w[sl], cg, kind)
        nz = None if noise is None else noise[sl]
        codes, sr, sc, corr = _quantize_rotated(
            rot, g, kind, table, symmetric, bits, fp8_scales, nz, scale_search
        )
        del rot
        packed[sl] = pack6(codes) if bits == 6 else pack_lo_first(codes)
        s_rel[sl], s_channel[sl] = sr, sc
        if correction is not None:
            correction[sl] = corr

    for_each(work, n, rows)
    out = {"weight": packed, "weight_s_rel": s_rel, "weight_s_channel": s_channel}
    if table is not None:
        out["weight_codebook"] = table.astype(np.float32)
    if correction is not None:
        out["weight_correction"] = np.ascontiguousarray(correction.T)
    return out


# --------------------------------------------------------------------------- dequantize


def geometry(packed: np.ndarray, s_rel: np.ndarray, group_size: int) -> tuple[int, int, int]:
    """(n, k, bits) from the packed width and the s_rel grid, as comfy-kitchen infers them."""
    n, cols = packed.shape
    k = s_rel.shape[1] * int(group_size)
    bits = cols * 8 // k if k > 0 else 0
    if k <= 0 or bits not in (4, 6) or k * bits != cols * 8:
        raise NumericError(
            f"asym_w4a8_int8: packed row width {cols} does not match K={k} at 4 or 6 bits"
        )
    return n, k, bits


def _as_f32_scale(s_rel: np.ndarray) -> np.ndarray:
    if s_rel.dtype == np.uint8:
        s_rel = s_rel.view(FP8)
    return s_rel.astype(np.float32)


def _levels(codebook: np.ndarray | None, bits: int) -> np.ndarray | None:
    """The F32 level of every code (None if a code could fall outside a short codebook)."""
    if codebook is None:
        return np.arange(-(1 << (bits - 1)), 1 << (bits - 1), dtype=np.float32)
    cb = np.asarray(codebook, dtype=np.float32).reshape(-1)
    return cb[:16].copy() if cb.size >= 16 else None


_GRID_TABLES: dict[tuple[bytes, bool], np.ndarray] = {}


def _grid_table(levels: np.ndarray, pairs: bool) -> np.ndarray:
    """``clip(rint(level * s), ±127)`` (the F32 operations :func:`_grid_f32` applies per
    element) for every float8_e4m3fn byte ``s`` and level, flattened [256 · L]. ``pairs``
    (16 levels): one uint64 per (s byte, packed byte) holding the F32 grid values of its low
    then its high nibble [256 · 256]."""
    key = (levels.tobytes(), pairs)
    table = _GRID_TABLES.get(key)
    if table is None:
        scales = np.arange(256, dtype=np.uint8).view(FP8).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            grid = scales[:, None] * levels[None, :]
            np.rint(grid, out=grid)
            np.clip(grid, -127, 127, out=grid)
        if pairs:
            both = np.empty((256, 256, 2), np.float32)
            both[:, :, 0] = np.tile(grid, (1, 16))  # byte & 0xF
            both[:, :, 1] = np.repeat(grid, 16, axis=1)  # byte >> 4
            grid = both.view(np.uint64)
        table = grid.reshape(-1)
        if len(_GRID_TABLES) >= 8:
            _GRID_TABLES.pop(next(iter(_GRID_TABLES)))
        _GRID_TABLES[key] = table
    return table


_HIGH_BITS = (
    (((np.arange(256, dtype=np.uint32)[:, None] >> np.arange(0, 8, 2, dtype=np.uint32)) & 3) << 4)
    .astype(np.uint8)
    .reshape(-1)
    .view(np.uint32)
)  # byte -> its four 2-bit fields << 4


def _unpack6_fast(packed: np.ndarray, k: int) -> np.ndarray:
    """:func:`.nibbles.unpack6` with the high plane expanded by one 256-entry gather."""
    p = packed.view(np.uint8)
    codes = unpack_lo_first(p[:, : k // 2])
    high = np.take(_HIGH_BITS, p[:, k // 2 :]).view(np.uint8)
    return np.bitwise_or(codes, high, out=codes)


def _grid_lookup(
    packed: np.ndarray,
    s_rel: np.ndarray,
    levels: np.ndarray,
    k: int,
    bits: int,
    g: int,
    out: np.ndarray | None,
) -> np.ndarray:
    """Grid values [n, K/g, g] of an FP8 ``s_rel`` as one gather from :func:`_grid_table`
    (bit-identical to scaling, rounding and clipping each element). 4-bit gathers two values
    per packed byte at ``s_byte · 256 + byte``; 6-bit one per code at ``s_byte · 64 + code``."""
    n = packed.shape[0]
    if out is None:
        out = np.empty((n, k // g, g), np.float32)
    pairs = bits == 4 and g % 2 == 0
    codes = (
        packed.view(np.uint8)
        if pairs
        else (_unpack6_fast(packed, k) if bits == 6 else unpack_lo_first(packed))
    )
    per_group = g // 2 if pairs else g
    idx = np.empty((n, k // g, per_group), np.uint16)
    base = np.multiply(
        s_rel.view(np.uint8), np.uint16(256 if pairs else levels.size), dtype=np.uint16
    )
    np.add(base[:, :, None], codes.reshape(n, k // g, per_group), out=idx, dtype=np.uint16)
    table = _grid_table(levels, pairs)
    if pairs:
        np.take(table, idx, out=out.reshape(n, k // g, per_group * 2).view(np.uint64))
    else:
        np.take(table, idx, out=out)
    return out


def _grid_f32(
    packed: np.ndarray,
    s_rel: np.ndarray,
    codebook: np.ndarray | None,
    group_size: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`int8_grid` as F32 values [n, K/g, g] (exact integers); into ``out`` if given."""
    n, k, bits = geometry(packed, s_rel, group_size)
    g = int(group_size)
    if codebook is not None and bits == 6:
        raise NumericError("asym_w4a8_int8: 6-bit storage has no codebook")
    levels = _levels(codebook, bits)
    if levels is not None and s_rel.dtype in (FP8, np.dtype(np.uint8)):
        return _grid_lookup(packed, s_rel, levels, k, bits, g, out)
    codes = unpack6(packed, k) if bits == 6 else unpack_lo_first(packed)
    if codebook is not None:
        values = np.take(np.asarray(codebook, dtype=np.float32).reshape(-1), codes)
    else:
        values = codes.astype(np.float32)
        values -= F32(1 << (bits - 1))
    v = values.reshape(n, k // g, g)
    v *= _as_f32_scale(s_rel)[:, :, None]
    np.rint(v, out=v)
    return np.clip(v, -127, 127, out=v if out is None else out)


def int8_grid(
    packed: np.ndarray, s_rel: np.ndarray, codebook: np.ndarray | None = None, group_size: int = 16
) -> np.ndarray:
    """The int8 weight the runtime GEMM consumes: clip(rint(level * s_rel), ±127)."""
    n, k, _ = geometry(packed, s_rel, group_size)
    return _grid_f32(packed, s_rel, codebook, group_size).astype(np.int8).reshape(n, k)


def dequantize(
    packed: np.ndarray,
    s_rel: np.ndarray,
    s_channel: np.ndarray,
    codebook: np.ndarray | None = None,
    correction: np.ndarray | None = None,
    group_size: int = 16,
    convrot_groupsize: int = 256,
    out_dtype: str = "float32",
) -> np.ndarray:
    """[N, K] weight: int8 grid * s_channel (+ correction), rotated back per convrot group."""
    n, k, bits = geometry(packed, s_rel, group_size)
    g = int(group_size)
    check_layout(k, g, convrot_groupsize, bits)
    sc = np.asarray(s_channel, dtype=np.float32).reshape(-1)
    if sc.size != n:
        raise NumericError(f"asym_w4a8_int8: weight_s_channel has {sc.size} values for {n} rows")
    corr = None
    if correction is not None:
        corr = to_f32(np.asarray(correction))
        if corr.shape != (k // g, n):
            raise NumericError(
                f"asym_w4a8_int8: weight_correction must be [{k // g}, {n}], got {corr.shape}"
            )
        corr = np.ascontiguousarray(corr.T)
    kind = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[out_dtype]
    cb = None if codebook is None else np.asarray(codebook, dtype=np.float32).reshape(-1)
    out = np.empty((n, k), np.float32)

    def work(rows: slice) -> None:
        wrot = _grid_f32(packed[rows], s_rel[rows], cb, g)
        wrot *= sc[rows, None, None]
        if corr is not None:
            wrot += corr[rows, :, None]
        wrot = wrot.reshape(-1, k)
        if kind != "f32":
            round_to(wrot, kind, out=wrot)
        rotate(wrot, convrot_groupsize, kind, out=out[rows])

    for_each(work, n, block_rows(k))
    return out


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    sd = o["scale_dtype"]
    sd = {"F32": "float32", "F8_E4M3": "float8_e4m3fn"}.get(sd, str(sd).replace("torch.", ""))
    out = quantize(
        w,
        int(o["group_size"]),
        int(o["convrot_groupsize"]),
        bool(o["codebook"]),
        bool(o["symmetric"]),
        int(o["bits"]),
        sd,
    )
    if "weight_correction" in out:
        from .lowp import from_f32

        out["weight_correction"] = from_f32(out["weight_correction"], kind_of(w))
    return out


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(
        t["weight"].view(np.int8),
        t["weight_s_rel"],
        t["weight_s_channel"],
        t.get("weight_codebook"),
        t.get("weight_correction"),
        int(o["group_size"]),
        int(o["convrot_groupsize"]),
        out_dtype,
    )


register_codec("asym_w4a8_int8", quantize=_quantize_layer, dequantize=_dequantize_layer)
