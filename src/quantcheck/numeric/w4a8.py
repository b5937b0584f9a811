"""asym_w4a8_int8: grouped 4-bit (codebook / uniform / asymmetric) or 6-bit codes on a
ConvRot-rotated weight, decoded in two stages through an int8 grid (spec §3.6, §6.4-6.5).

Quantize (bit-exact emulation of comfy-kitchen's eager quantizer): rotate in the input dtype,
then F32; codebook choice by a kurtosis gate (fixed Lloyd-Max LUT or a fitted 16-level table);
2 ALS passes; ``s_channel``/``s_rel``; codes re-assigned against the decoded int8 grid; 6-bit
searches the fp8 neighbours of ``s_rel``. Fitted-codebook cluster means use float64 sums, so
they can differ from torch by one F32 ulp.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .errors import NumericError
from .hadamard import check_group, rotate
from .lowp import F32, abs_max, kind_of, last_axis_reduce, round_to, to_f32
from .nibbles import pack6, pack_lo_first, unpack6, unpack_lo_first
from .parallel import chunks, for_each
from .torch_order import linspace_f32, torch_quantile, torch_randint, torch_sum_last

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
FIXED_LUT = np.array(
    [-0.980602, -0.794529, -0.638165, -0.500986, -0.377321, -0.263187, -0.155210, -0.050720,
     0.052541, 0.156985, 0.265284, 0.379533, 0.502636, 0.638953, 0.794876, 0.980671],
    np.float32,
)
W6_TABLE = np.arange(-31, 32, dtype=np.float32)
_GATE_KURTOSIS = -0.1
_KURTOSIS_SAMPLE = 1 << 19
_FIT_SAMPLE = 300000
_SAMPLE_ELEMS = 1 << 22
_ALS_ITERS = 2
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


def fit_codebook(normalized: np.ndarray, levels: int = 16, iterations: int = 25) -> np.ndarray:
    """k-means (Lloyd) codebook on up to 300000 sampled values, initialised at quantiles."""
    samples = normalized.ravel()
    if samples.size > _FIT_SAMPLE:
        samples = samples[torch_randint(samples.size, _FIT_SAMPLE, 0)]
    samples = samples.astype(np.float32)
    cb = torch_quantile(np.sort(samples), linspace_f32(0.0, 1.0, levels))
    for _ in range(iterations):
        assign = np.argmin(np.abs(samples[:, None] - cb[None, :]), axis=1)
        counts = np.bincount(assign, minlength=levels)
        sums = np.bincount(assign, weights=samples.astype(np.float64), minlength=levels)
        new = cb.copy()
        nz = counts > 0
        new[nz] = sums[nz].astype(np.float32) / counts[nz].astype(np.float32)
        cb = new
    return cb


def codebook_for(normalized: np.ndarray) -> np.ndarray:
    """Fixed LUT unless the group-normalized rotated weight's excess kurtosis is > -0.1."""
    x = normalized.ravel()
    if x.size > _KURTOSIS_SAMPLE:
        x = x[torch_randint(x.size, _KURTOSIS_SAMPLE, 0)]
    x = x.astype(np.float64)
    std = x.std(ddof=1) if x.size > 1 else 0.0
    kurt = np.mean(((x - x.mean()) / (std + 1e-9)) ** 4) - 3.0
    if kurt <= _GATE_KURTOSIS:
        return FIXED_LUT.copy()
    return fit_codebook(normalized)


def decide_codebook(x: np.ndarray, kind: str, g: int, cg: int) -> np.ndarray:
    """One table for the whole tensor from an evenly strided row sample (as comfy-kitchen)."""
    n, k = x.shape
    max_rows = max(1, _SAMPLE_ELEMS // max(k, 1))
    sample = x[linspace_f32(0, n - 1, max_rows).astype(np.int64)] if n > max_rows else x
    return codebook_for(_normalized_groups(rotate(sample, cg, kind), g))


# --------------------------------------------------------------------------- assignment


def searchsorted_rows(
    table: np.ndarray, t: np.ndarray, guess: np.ndarray | None = None
) -> np.ndarray:
    """Per row b: number of entries of sorted ``table[b]`` that are < ``t[b, :]``.

    Short tables are counted directly; with a ``guess`` the count is walked from it to the
    exact answer (entries that are NaN never count and stop the walk).
    """
    b, n_lv = table.shape
    if guess is None:
        pos = np.zeros(t.shape, np.int64)
        with np.errstate(invalid="ignore"):
            for j in range(n_lv):
                pos += t > table[:, j : j + 1]
        return pos
    flat = table.ravel()
    base = (np.arange(b, dtype=np.int64) * n_lv)[:, None]
    pos = np.clip(guess, 0, n_lv)
    with np.errstate(invalid="ignore"):
        for _ in range(n_lv + 1):
            up = (pos < n_lv) & (flat[base + np.minimum(pos, n_lv - 1)] < t)
            down = (pos > 0) & (flat[base + np.maximum(pos - 1, 0)] >= t)
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
    """``np.searchsorted(codebook, v, 'left')`` for F32 ``v`` via a 64K-bucket table."""
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
    flat = table_rows.ravel()
    base = (np.arange(table_rows.shape[0], dtype=np.int64) * (last + 1))[:, None]
    lo = np.clip(pos - 1, 0, last)
    hi = np.clip(pos, 0, last)
    dlo = np.abs(t - flat[base + lo])
    dhi = np.abs(t - flat[base + hi])
    return np.where(dhi < dlo, hi, lo)


def assign_codebook(normalized: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Nearest level index of a shared sorted codebook."""
    pos = count_less(codebook, normalized).astype(np.intp)
    last = codebook.size - 1
    lo = np.clip(pos - 1, 0, last)
    hi = np.clip(pos, 0, last)
    dlo = np.abs(normalized - codebook[lo])
    dhi = np.abs(normalized - codebook[hi])
    return np.where(dhi < dlo, hi, lo)


def grid_levels(table: np.ndarray, s_rel_f32: np.ndarray) -> np.ndarray:
    """int8 values every level of every group decodes to: clip(rint(level * s_rel), ±127)."""
    with np.errstate(invalid="ignore"):
        lv = np.rint(table[None, None, :] * s_rel_f32[:, :, None])
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
            est = np.floor((np.ceil(t) - 0.5) / step.reshape(-1, 1)) + 32
            guess = np.nan_to_num(np.clip(est, 0, lv.shape[1]), nan=0).astype(np.int64)
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
        cands = [s_rel.astype(np.float32), down.view(FP8).astype(np.float32),
                 up.view(FP8).astype(np.float32)]
    else:
        base = s_rel.astype(np.float32)
        cands = [base, base * F32(0.97), base * F32(1.03)]
    best_scale = best_err = best_idx = None
    for cand in cands:
        levels = grid_levels(table, cand)
        idx = assign_grid(target, levels, cand)
        with np.errstate(invalid="ignore"):
            d = np.take_along_axis(levels, idx, axis=2) - target
            err = torch_sum_last(d * d)
        if best_err is None:
            best_scale, best_err, best_idx = cand.copy(), err, idx
            continue
        with np.errstate(invalid="ignore"):
            better = err < best_err
        best_err = np.where(better, err, best_err)
        best_scale = np.where(better, cand, best_scale)
        best_idx = np.where(better[:, :, None], idx, best_idx)
    scale = best_scale.astype(FP8) if s_rel.dtype == FP8 else best_scale.astype(np.float32)
    return scale, best_idx


# --------------------------------------------------------------------------- quantize


def _quantize_rotated(
    rot: np.ndarray,
    g: int,
    kind: str,
    codebook: np.ndarray | None,
    symmetric: bool,
    bits: int,
    fp8_scales: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows of an F32 rotated weight -> (codes uint8 [n, K], s_rel, s_channel, correction)."""
    n, k = rot.shape
    w = rot.reshape(n, k // g, g)
    correction = None
    table = None
    if bits == 6 or codebook is not None:
        amax = last_axis_reduce(np.abs(w))
        if bits == 6:
            table = W6_TABLE

            def assign(v: np.ndarray) -> np.ndarray:
                return (np.clip(np.rint(v), -31, 31) + 31).astype(np.int64)

            gs = np.maximum(amax / F32(31), _EPS)
        else:
            table = codebook

            def assign(v: np.ndarray) -> np.ndarray:
                return assign_codebook(v, table)

            gs = np.maximum(amax, _EPS)
        q = assign(w / gs)
        for _ in range(_ALS_ITERS):
            lv = table[q]
            num = torch_sum_last(w * lv)
            den = np.maximum(torch_sum_last(lv * lv), _EPS)
            gs = np.maximum(num / den, _EPS)[:, :, None]
            q = assign(w / gs)
        shifted = table[q] * gs
    elif symmetric:
        gs = np.maximum(last_axis_reduce(np.abs(w)) / F32(7), _EPS)
        signed = np.clip(np.rint(w / gs), -8, 7)
        codes = (signed + 8).astype(np.uint8)
        shifted = signed * gs
    else:
        mn = last_axis_reduce(w, np.minimum)
        gs = np.maximum((last_axis_reduce(w) - mn) / F32(15), _EPS)
        u = np.clip(np.rint((w - mn) / gs), 0, 15)
        codes = u.astype(np.uint8)
        shifted = (u - F32(8)) * gs
        correction = round_to((F32(8) * gs + mn)[:, :, 0], kind)
    s_channel = np.maximum(np.max(np.abs(shifted), axis=(1, 2)) / F32(127), _EPS)
    s_rel = gs[:, :, 0] / s_channel[:, None]
    if fp8_scales:
        s_rel = s_rel.astype(FP8)
        if np.isnan(s_rel.astype(np.float32)).any():
            raise NumericError("asym_w4a8_int8: a group scale overflows float8_e4m3fn")
    if table is not None:
        target = w / s_channel[:, None, None]
        if bits == 6:
            s_rel, idx = _search_group_scale(target, s_rel, table)
            codes = (idx + 1).astype(np.uint8)
        else:
            idx = assign_grid(target, grid_levels(table, s_rel.astype(np.float32)))
            codes = idx.astype(np.uint8)
    return codes.reshape(n, k), s_rel, s_channel.astype(np.float32), correction


def quantize(
    w: np.ndarray,
    group_size: int = 16,
    convrot_groupsize: int = 256,
    codebook: bool = True,
    symmetric: bool = True,
    bits: int = 4,
    scale_dtype: str = "float8_e4m3fn",
) -> dict[str, np.ndarray]:
    """Weight [N, K] -> dict with weight, weight_s_rel, weight_s_channel (+ codebook/correction)."""
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
    table = decide_codebook(w, kind, g, cg) if symmetric and codebook else None
    rows = max(1, (1 << 17) // max(k, 1))
    slices = list(chunks(n, rows))
    fp8_scales = scale_dtype == "float8_e4m3fn"
    parts: list = [None] * len(slices)

    def work(i: int) -> None:
        rot = rotate(w[slices[i]], cg, kind)
        parts[i] = _quantize_rotated(rot, g, kind, table, symmetric, bits, fp8_scales)

    for_each(lambda sl: work(sl.start), len(slices), 1, blas=True)
    codes = np.concatenate([p[0] for p in parts])
    out = {
        "weight": pack6(codes) if bits == 6 else pack_lo_first(codes),
        "weight_s_rel": np.concatenate([p[1] for p in parts]),
        "weight_s_channel": np.concatenate([p[2] for p in parts]),
    }
    if table is not None:
        out["weight_codebook"] = table.astype(np.float32)
    if not symmetric:
        out["weight_correction"] = np.ascontiguousarray(np.concatenate([p[3] for p in parts]).T)
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


def int8_grid(
    packed: np.ndarray, s_rel: np.ndarray, codebook: np.ndarray | None = None, group_size: int = 16
) -> np.ndarray:
    """The int8 weight the runtime GEMM consumes: clip(rint(level * s_rel), ±127)."""
    n, k, bits = geometry(packed, s_rel, group_size)
    g = int(group_size)
    codes = unpack6(packed, k) if bits == 6 else unpack_lo_first(packed)
    if codebook is not None:
        if bits == 6:
            raise NumericError("asym_w4a8_int8: 6-bit storage has no codebook")
        values = np.asarray(codebook, dtype=np.float32).reshape(-1)[codes]
    else:
        values = codes.astype(np.float32) - F32(1 << (bits - 1))
    v = values.reshape(n, k // g, g) * _as_f32_scale(s_rel)[:, :, None]
    return np.clip(np.rint(v), -127, 127).astype(np.int8).reshape(n, k)


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
        i8 = int8_grid(packed[rows], s_rel[rows], cb, g)
        wrot = i8.reshape(-1, k // g, g).astype(np.float32) * sc[rows, None, None]
        if corr is not None:
            wrot += corr[rows, :, None]
        wrot = wrot.reshape(-1, k)
        if kind != "f32":
            round_to(wrot, kind, out=wrot)
        out[rows] = rotate(wrot, convrot_groupsize, kind)

    for_each(work, n, max(1, (1 << 17) // k), blas=True)
    return out
