"""The numeric contract against comfy-kitchen where it sums (README "Numeric contract").

Every rotated value ck computes is some F32 summation of the same terms ``x_k·2^-j`` as ours,
so it lies in ``[R - B, R + B]`` (R: our F32 rotation, B: ``hadamard.error_bound``, valid for
every summation order). Each check below pushes that interval through the formula that
follows the sum (all monotone, correctly rounded elementwise steps, applied to the interval's
ends) and asserts that ck's stored value lies in the resulting interval. A code may therefore
differ from ours only where the interval straddles a rounding boundary, and the checks count
and assert exactly that. No tolerance here is a guess: each is the interval of its formula.

The W4A8 codebook and 6-bit group scales (ALS fits, the 6-bit scale search, the k-means
table) are not sums of rotated values but fits over discrete choices; for those the codes
are checked given ck's own stored scales, and the scales themselves with the tolerances in
:func:`check_w4a8` (stated as such in the README).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from helpers import codes_of

from quantcheck.numeric import hadamard, lowp, nibbles, w4a8

F32 = np.float32
FP8 = np.dtype(ml_dtypes.float8_e4m3fn)


def _f32_down(x: np.ndarray) -> np.ndarray:
    y = x.astype(F32)
    return np.where(y > x, np.nextafter(y, F32(-np.inf)), y).astype(F32)


def _f32_up(x: np.ndarray) -> np.ndarray:
    y = x.astype(F32)
    return np.where(y < x, np.nextafter(y, F32(np.inf)), y).astype(F32)


def rotation_interval(x: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ours, lo, hi): our F32 rotation of F32 rows ``x`` and the F32 interval that holds every
    F32 summation order of the same terms."""
    r = hadamard.rotate(x, g, "f32")
    b = hadamard.error_bound(hadamard.abs_term_sums(x, g), g)
    r64 = r.astype(np.float64)
    return r, _f32_down(r64 - b), _f32_up(r64 + b)


def rk(x: np.ndarray, kind: str) -> np.ndarray:
    """Round F32 values to ``kind`` (returned as F32), like the codecs do."""
    return lowp.round_to(np.array(x, F32, copy=True), kind)


def _row_amax(lo: np.ndarray, hi: np.ndarray, axis) -> tuple[np.ndarray, np.ndarray]:
    """Interval of max|v| over ``axis`` for v in [lo, hi] elementwise."""
    inside = (lo <= 0) & (hi >= 0)
    least = np.where(inside, F32(0), np.minimum(np.abs(lo), np.abs(hi)))
    most = np.maximum(np.abs(lo), np.abs(hi))
    return least.max(axis=axis), most.max(axis=axis)


def _quot(nlo, nhi, dlo, dhi) -> tuple[np.ndarray, np.ndarray]:
    """Interval of fl(n / d) for n in [nlo, nhi], d in [dlo, dhi] with d > 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.stack([nlo / dlo, nlo / dhi, nhi / dlo, nhi / dhi])
    return c.min(axis=0), c.max(axis=0)


def _assert_within(name: str, value, lo, hi) -> None:
    value, lo, hi = (np.asarray(a, F32) for a in (value, lo, hi))
    bad = ~((lo <= value) & (value <= hi))
    assert not bad.any(), (
        f"{name}: {int(bad.sum())} value(s) outside the any-order interval, e.g. "
        f"{value[bad][:3]} not in [{lo[bad][:3]}, {hi[bad][:3]}]"
    )


def _code_stats(name: str, ours, theirs, c_lo, c_hi) -> dict:
    """ck's codes within [c_lo, c_hi]; ours too; differences only where the interval straddles
    a rounding boundary (c_lo != c_hi), which is asserted for every differing code."""
    _assert_within(f"{name} ck codes", theirs, c_lo, c_hi)
    _assert_within(f"{name} our codes", ours, c_lo, c_hi)
    differ = ours != theirs
    assert (c_lo[differ] != c_hi[differ]).all()
    return {
        "codes": int(differ.sum()),
        "of": int(differ.size),
        "near_boundary": int((c_lo != c_hi).sum()),
    }


def check_int8_convrot(w: np.ndarray, g: int, ours: dict, theirs: dict) -> dict:
    """int8 ConvRot: scale ``max(amax/127, 1e-30)`` of the rounded rotated row, codes
    ``clip(rint(rk(rk(r) / rk(s))), -128, 127)``."""
    kind = lowp.kind_of(w)
    _, lo, hi = rotation_interval(lowp.to_f32(w), g)
    lo, hi = rk(lo, kind), rk(hi, kind)
    a_lo, a_hi = _row_amax(lo, hi, 1)

    def scale(a):
        return np.maximum(a / F32(127), F32(1e-30)).astype(F32)

    s_ck = theirs["weight_scale"].reshape(-1)
    _assert_within("int8 scale", s_ck, scale(a_lo), scale(a_hi))
    _assert_within("int8 scale (ours)", ours["weight_scale"].reshape(-1), scale(a_lo), scale(a_hi))
    sm = rk(s_ck, kind)
    sm[sm == 0] = lowp.smallest_normal(kind)

    def code(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.clip(np.rint(rk(v / sm[:, None], kind)), -128, 127)

    return _code_stats(
        "int8 convrot",
        ours["weight"].astype(F32)
        if np.array_equal(ours["weight_scale"], s_ck)
        else code(rk(hadamard.rotate(lowp.to_f32(w), g, "f32"), kind)),
        theirs["weight"].astype(F32),
        code(lo),
        code(hi),
    )


def check_w4a4(w: np.ndarray, g: int, ours: dict, theirs: dict) -> dict:
    """convrot_w4a4: ``s = rk(max(amax, rk(1e-10)) / 7)``, codes ``clip(rint(rk(rk(r)/s)), ±7)``."""
    kind = lowp.kind_of(w)
    _, lo, hi = rotation_interval(lowp.to_f32(w), g)
    lo, hi = rk(lo, kind), rk(hi, kind)
    a_lo, a_hi = _row_amax(lo, hi, 1)
    tiny = lowp.round_scalar(1e-10, kind)

    def scale(a):
        return rk(np.maximum(a, tiny) / F32(7), kind)

    s_ck = theirs["weight_scale"].reshape(-1)
    _assert_within("w4a4 scale", s_ck, scale(a_lo), scale(a_hi))
    _assert_within("w4a4 scale (ours)", ours["weight_scale"].reshape(-1), scale(a_lo), scale(a_hi))

    def code(v, s):
        return np.clip(np.rint(rk(v / s[:, None], kind)), -7, 7)

    mine = codes_of("convrot_w4a4", ours, w.shape[1]).astype(F32)
    if not np.array_equal(ours["weight_scale"], s_ck):  # judge ours against ck's scale too
        mine = code(rk(hadamard.rotate(lowp.to_f32(w), g, "f32"), kind), s_ck)
    return _code_stats(
        "w4a4",
        mine,
        codes_of("convrot_w4a4", theirs, w.shape[1]).astype(F32),
        code(lo, s_ck),
        code(hi, s_ck),
    )


def _fp8(x: np.ndarray) -> np.ndarray:
    return x.astype(F32).astype(FP8).astype(F32)


def check_w4a8(w: np.ndarray, opts: dict, ours: dict, theirs: dict) -> dict:
    """asym_w4a8_int8 against the any-order rotation interval.

    Uniform symmetric / asymmetric: the group scale ``max(amax/7, 1e-8)`` or
    ``max((max - min)/15, 1e-8)``, the codes, ``s_channel``, ``s_rel`` and the correction
    ``rk(8·gs + min)`` are each checked against the interval of their formula (the correction's
    interval is as wide as its terms' errors: it is compared relative to the size of 8·gs and
    min, not to the cancelled result). Codebook and 6-bit: the codes must lie in the interval of
    the nearest-grid-level assignment given ck's stored s_rel, s_channel and table; the fitted
    scales are compared with tolerances (s_channel 2^-7 relative, fp8 s_rel within 2 steps,
    F32 s_rel 2^-7 relative, a fitted table within 2^-7 of its range)."""
    kind = lowp.kind_of(w)
    n, k = w.shape
    g, cg = int(opts.get("group_size", 16)), int(opts.get("convrot_groupsize", 256))
    bits = int(opts.get("bits", 4))
    _, lo, hi = rotation_interval(lowp.to_f32(w), cg)
    lo, hi = (rk(v, kind).reshape(n, k // g, g) for v in (lo, hi))
    codebook = bits == 4 and opts.get("codebook", True) and opts.get("symmetric", True)
    sc_ck = theirs["weight_s_channel"].astype(F32)
    sr_ck = theirs["weight_s_rel"].astype(F32)
    stats: dict = {}
    if bits == 6 or codebook:
        table = w4a8.W6_TABLE if bits == 6 else theirs["weight_codebook"].astype(F32)
        levels = w4a8.grid_levels(table, sr_ck)
        t_lo = lo / sc_ck[:, None, None]
        t_hi = hi / sc_ck[:, None, None]

        def grid_value(t):
            idx = w4a8.assign_grid(t.astype(F32), levels)
            return np.take_along_axis(levels, idx.astype(np.int64), axis=2)

        kk = codes_of("asym_w4a8_int8", theirs, k).reshape(n, k // g, g)
        kk = kk - 1 if bits == 6 else kk
        v_ck = np.take_along_axis(levels, kk.astype(np.int64), axis=2)
        mine_k = codes_of("asym_w4a8_int8", ours, k).reshape(n, k // g, g)
        mine_k = mine_k - 1 if bits == 6 else mine_k
        same_scales = all(
            np.array_equal(ours[key], theirs[key])
            for key in ("weight_s_rel", "weight_s_channel", "weight_codebook")
            if key in ours
        )
        v_ours = (
            np.take_along_axis(levels, mine_k.astype(np.int64), axis=2)
            if same_scales
            else grid_value(
                rk(hadamard.rotate(lowp.to_f32(w), cg, "f32"), kind).reshape(n, k // g, g)
                / sc_ck[:, None, None]
            )
        )
        stats.update(_code_stats("w4a8 grid", v_ours, v_ck, grid_value(t_lo), grid_value(t_hi)))
        so = ours["weight_s_channel"].astype(F32)
        np.testing.assert_allclose(so, sc_ck, rtol=2.0**-7)
        if theirs["weight_s_rel"].dtype == FP8:
            step = np.abs(
                ours["weight_s_rel"].view(np.uint8).astype(int)
                - theirs["weight_s_rel"].view(np.uint8).astype(int)
            )
            assert step.max(initial=0) <= 2
        else:
            np.testing.assert_allclose(ours["weight_s_rel"], sr_ck, rtol=2.0**-7)
        if "weight_codebook" in theirs:
            span = float(np.ptp(theirs["weight_codebook"]))
            np.testing.assert_allclose(
                ours["weight_codebook"], theirs["weight_codebook"], rtol=0, atol=2.0**-7 * span
            )
        return stats
    eps = F32(1e-8)
    if opts.get("symmetric", True):
        a_lo, a_hi = _row_amax(lo, hi, 2)
        gs_lo = np.maximum(a_lo / F32(7), eps)[..., None]
        gs_hi = np.maximum(a_hi / F32(7), eps)[..., None]
        q_lo, _ = _quot(lo, lo, gs_lo, gs_hi)
        _, q_hi = _quot(hi, hi, gs_lo, gs_hi)
        c_lo, c_hi = (np.clip(np.rint(v), -8, 7) + F32(8) for v in (q_lo, q_hi))
    else:
        mn_lo, mn_hi = lo.min(axis=2, keepdims=True), hi.min(axis=2, keepdims=True)
        mx_lo, mx_hi = lo.max(axis=2, keepdims=True), hi.max(axis=2, keepdims=True)
        gs_lo = np.maximum((mx_lo - mn_hi) / F32(15), eps)
        gs_hi = np.maximum((mx_hi - mn_lo) / F32(15), eps)
        q_lo, _ = _quot(lo - mn_hi, lo - mn_hi, gs_lo, gs_hi)
        _, q_hi = _quot(hi - mn_lo, hi - mn_lo, gs_lo, gs_hi)
        c_lo, c_hi = (np.clip(np.rint(v), 0, 15) for v in (q_lo, q_hi))
        corr_ck = theirs["weight_correction"].astype(F32).T
        lo_c = rk((F32(8) * gs_lo + mn_lo)[..., 0], kind)
        hi_c = rk((F32(8) * gs_hi + mn_hi)[..., 0], kind)
        _assert_within("w4a8 correction", corr_ck, lo_c, hi_c)
        _assert_within(
            "w4a8 correction (ours)", ours["weight_correction"].astype(F32).T, lo_c, hi_c
        )
        stats["correction"] = int(
            (ours["weight_correction"].astype(F32) != theirs["weight_correction"].astype(F32)).sum()
        )
    mine = codes_of("asym_w4a8_int8", ours, k).reshape(n, k // g, g).astype(F32)
    theirs_c = codes_of("asym_w4a8_int8", theirs, k).reshape(n, k // g, g).astype(F32)
    stats.update(_code_stats("w4a8 codes", mine, theirs_c, c_lo, c_hi))
    # s_channel = max(max|(c - 8)·gs| / 127, 1e-8) over the row, c in [c_lo, c_hi]
    least, most = _row_amax(c_lo - F32(8), c_hi - F32(8), ())
    sc_lo = np.maximum((least * gs_lo).max(axis=(1, 2)) / F32(127), eps)
    sc_hi = np.maximum((most * gs_hi).max(axis=(1, 2)) / F32(127), eps)
    _assert_within("w4a8 s_channel", sc_ck, sc_lo, sc_hi)
    _assert_within("w4a8 s_channel (ours)", ours["weight_s_channel"], sc_lo, sc_hi)
    r_lo, _ = _quot(gs_lo[..., 0], gs_lo[..., 0], sc_lo[:, None], sc_hi[:, None])
    _, r_hi = _quot(gs_hi[..., 0], gs_hi[..., 0], sc_lo[:, None], sc_hi[:, None])
    if theirs["weight_s_rel"].dtype == FP8:
        r_lo, r_hi = _fp8(r_lo), _fp8(r_hi)
    _assert_within("w4a8 s_rel", sr_ck, r_lo, r_hi)
    _assert_within("w4a8 s_rel (ours)", ours["weight_s_rel"].astype(F32), r_lo, r_hi)
    return stats


# --------------------------------------------------------------------------- dequantize


def pre_rotation(fmt: str, tensors: dict, marker: dict, n: int, k: int, kind: str) -> np.ndarray:
    """The F32 values each rotated format's dequantize rotates (elementwise, exact formulas)."""
    if fmt == "int8_tensorwise":
        s = np.asarray(tensors["weight_scale"], F32)
        return tensors["weight"].astype(F32) * (s.reshape(()) if s.size == 1 else s.reshape(-1, 1))
    if fmt == "convrot_w4a4":
        q = nibbles.unpack_signed_lo_first(tensors["weight"]).astype(F32)
        return q * np.asarray(tensors["weight_scale"], F32).reshape(-1, 1)
    g = int(marker.get("group_size", 16))
    i8 = w4a8.int8_grid(
        tensors["weight"], tensors["weight_s_rel"], tensors.get("weight_codebook"), g
    )
    x = (
        i8.reshape(n, k // g, g).astype(F32)
        * tensors["weight_s_channel"].astype(F32)[:, None, None]
    )
    if "weight_correction" in tensors:
        x += lowp.to_f32(tensors["weight_correction"]).T[:, :, None]
    x = x.reshape(n, k)
    return rk(x, kind) if kind != "f32" else x


def check_rotated_dequantize(
    fmt: str, tensors: dict, marker: dict, shape, out_dtype: str, ours: np.ndarray, ref: np.ndarray
) -> int:
    """ck's output within the any-order interval of the inverse rotation, rounded to the output
    dtype at both ends; returns how many values differ from ours."""
    n, k = shape
    kind = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[out_dtype]
    g = int(marker.get("convrot_groupsize", 256))
    grouped = fmt in ("asym_w4a8_int8", "w6a8_int8")
    x = pre_rotation(fmt, tensors, marker, n, k, kind if grouped else "f32")
    _, lo, hi = rotation_interval(x, g)
    a, b = ours.astype(F32), ref.astype(F32)
    _assert_within(f"{fmt} dequantize ck", b, rk(lo, kind), rk(hi, kind))
    _assert_within(f"{fmt} dequantize ours", a, rk(lo, kind), rk(hi, kind))
    return int((a != b).sum())
