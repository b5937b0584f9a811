"""A measured alternative to quantcheck's rotation (issue 28), kept here and not in the
library: the ConvRot rotation as BLAS matrix products, taken only by the groups whose every
sum is exact, so that the result has :func:`quantcheck.numeric.hadamard.fwht`'s bits on every
BLAS, CPU and thread count. ``bench_rotation.py`` times it against the butterflies
(:func:`patched` puts :func:`rotate` into the codecs); ``tests/numeric/test_rotation_gemm.py``
proves the bits. On the AMD EPYC Zen 4 of BENCHMARKS.md it was no faster at g = 16 and 64
(0.93-1.06x: the check costs about what the matrix product saves) and slower at 256.

Why the bits cannot differ
--------------------------
**Lemma.** Let ``t_1..t_n`` be F32 values, each +0 or a nonzero integer multiple of ``2^q``
with ``q >= -126``, and ``Σ|t_k| <= min(2^(24+q), 2^127)``. Every signed partial sum
``Σ_{k∈A} ±t_k`` (any subset A, any signs) is then an integer multiple of ``2^q`` of
magnitude at most ``2^(24+q)``: it has a 24-bit significand, it is finite, and when nonzero it
is at least ``2^q >= 2^-126`` (normal). So every operation of any evaluation of
``Σ h_k·t_k`` with ``h_k = ±2^-i`` (each product ``t_k·h_k`` is exact for the same reason;
additions, subtractions or fused multiply-adds rounded to nearest in F32 or any wider format,
in any order or tree, with or without flush-to-zero) returns its exact value, and so does
the whole evaluation. A zero result has the same sign in both evaluations used here, +0: in
round-to-nearest ``x + y`` and ``fma(a, b, y)`` give -0 only when both addends are -0, and
``x - y`` only when x is -0 and y is +0. The butterflies add and subtract values that are
never -0 (no leaf is), so they never make one; a BLAS product forms each output from the
products ``h_k·t_k`` by additions or fused multiply-adds, so it returns -0 only if every
product is -0 — all ``t_k`` zero and every ``h_k`` of the row negative, which no row of a
Hadamard matrix is. The radix-4 butterflies of ``hadamard.fwht`` and a BLAS matrix product
therefore return the same F32 bits, hence the same value after the final rounding to
BF16/F16. (The check below rejects zero inputs; only the second stage pair of g = 256 sees
+0 terms, from exact cancellations.)

**The check** (:func:`exact_sets`), per set of ``n`` values ``x_k`` with at most ``p``
significant bits (BF16 8, F16 11; F32 blocks only when every value is a BF16 value): with
``E_k = floor(log2|x_k|)``, ``x_k`` is an integer multiple of ``2^(E_k-p+1)`` (a subnormal F16
value, a multiple of ``2^-24``, too), so all are multiples of ``G = 2^(Emin-p+1)``. With
``S = Σ 2^E_k`` and ``R = Σ 2^-E_k``: ``Σ|x_k| < 2S`` and ``2^Emin >= 1/R``, so

- ``S·R <= 2^(24-p)`` gives ``Σ|x_k| <= 2^24·G``;
- ``R <= 2^(127-p-j)`` makes ``G·2^-j >= 2^-126``, so the terms ``t_k = x_k·2^-j`` (``2^-j``
  folded into the matrix, as the butterflies form them first) are normal multiples of
  ``q = G·2^-j`` and ``Σ|t_k| <= 2^24·q``;
- ``S <= 2^100`` keeps every sum far from overflow.

That is the lemma's premise. ``2^E_k`` is ``bits & 0x7F800000`` of the F32 value and
``2^-E_k`` is ``0x7F000000`` minus that: a zero (either sign) or subnormal value gives
``2^-E = 2^127`` and fails the ``R`` bound, Inf/NaN give ``S = inf`` and fail, ``|x| >= 2^100``
fails the ``S`` bound. ``S`` and ``R`` are summed by BLAS too, in some order: ``n - 1``
rounded additions of nonnegative terms return at least ``1 - γ_{n-1}`` times the exact sum
(γ as in ``hadamard.gamma``), and the bounds are tested ``1 - 2^-12`` below the limits
(more than ``(1-γ_63)^2`` and the rounding of the product), so a set that passes is exact.

**Routes** (a group in its natural layout; ``H_g = H_a ⊗ H_16``, high index first, as
``hadamard.hadamard`` builds it):

- g = 16: the group is the set; ``[P, 16] @ (H_16·2^-2)``.
- g = 64: the whole group of 64 is the set (the lemma covers every subset sum, hence every
  grouping): ``[4P, 16] @ (H_16·2^-3)`` on the low index, then ``H_4 @ [P, 4, 16]``. Taken
  for BF16 values only: 11-bit F16 values leave too little room (about 2% of F16 groups of a
  random weight pass).
- g = 256: in the butterflies' order, two 16-term stage pairs (``H_256 = H_16 ⊗ H_16``):
  ``(H_16·2^-4) @ X`` per group over the high index, each column of X a checked set, then
  the rows of that product ``@ H_16`` over the low index, each row checked by the lemma with
  the finest column spacing (:func:`_two_pairs`). Every row holds the column of the group's
  smallest value, so about 15% of the groups of a random BF16 weight fail, and the route
  is slower than the butterflies (BENCHMARKS.md).

The groups that fail go through ``hadamard.fwht``, and so do whole blocks whose first
2^14 values have fewer than 3/4 of their groups passing (weights full of zeros, say: the
check and the fallback would then cost more than they save). The route is off when the BLAS
fails a start-up test (:func:`blas_is_exact`): only the speed changes, never a bit. BLAS
calls are kept to ``M·N·K <= 2^18`` multiply-adds, which OpenBLAS runs on the calling thread
(the codecs have their own pool; a multithreaded call was 40x slower here, under load).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator

import numpy as np

from quantcheck.numeric import int8, w4a4, w4a8
from quantcheck.numeric.errors import NumericError
from quantcheck.numeric.hadamard import block_rows, check_group, fwht, hadamard
from quantcheck.numeric.lowp import BF16, F16, round_to

GROUPS = (16, 64, 256)  # group sizes with a GEMM route
_GEMM_ELEMS = 1 << 18  # multiply-adds per BLAS call
_MARGIN = 1.0 - 2.0**-12  # below every bound of the check
_LOCAL = threading.local()
_KEEP = 1 << 20  # largest per-thread scratch kept between calls (elements)
_matmul = np.matmul  # every BLAS call of the route (tests put an inexact one here)
_SAMPLE = 1 << 14  # values at the head of a block whose groups are checked first
_WORTH = 0.75  # below this passing share the route costs more than it saves


@functools.cache
def _matrices(g: int) -> tuple[np.ndarray, np.ndarray]:
    """(``H_16·2^-j`` for the low index, ``H_a`` with ±1 entries for the high one, a = g/16)
    of a group of ``g``; both symmetric, so ``rows @ M`` applies them to rows."""
    j = (g.bit_length() - 1) // 2
    low = hadamard(16) * np.float32(4.0 * 2.0**-j)  # entries ±2^-j
    a = g // 16
    high = hadamard(a) * np.float32(a**0.5) if a > 1 else np.ones((1, 1), np.float32)
    for m in (low, high):
        m.setflags(write=False)
    return low, high


def _scratch(name: str, size: int, dtype: type) -> np.ndarray:
    """A flat per-thread scratch array of ``size`` elements (kept while not too large)."""
    kept: np.ndarray | None = getattr(_LOCAL, name, None)
    if kept is not None and kept.size >= size:
        return kept[:size]
    arr: np.ndarray = np.empty(size, dtype)
    if size <= _KEEP:
        setattr(_LOCAL, name, arr)
    return arr


def _rows_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` for ``a`` [M, K] and ``b`` [K, N], in row chunks of at most
    :data:`_GEMM_ELEMS` multiply-adds."""
    step = max(1, _GEMM_ELEMS // (a.shape[1] * b.shape[1]))
    for r in range(0, a.shape[0], step):
        _matmul(a[r : r + step], b, out=out[r : r + step])


def _precision(x: np.ndarray, bits: np.ndarray, g: int) -> int:
    """Significant bits the check may assume for the block (0: no route): 8 for BF16 and for
    F32 blocks of BF16 values, 11 for F16 at g = 16 (too few F16 groups pass at 64 and 256)."""
    if x.dtype == BF16:
        return 8
    if x.dtype == F16:
        return 11 if g == 16 else 0
    if np.bitwise_and(bits[:4096], 0xFFFF).any() or np.bitwise_and(bits, 0xFFFF).any():
        return 0  # wider F32 values: their sums are rarely exact (the first look is cheap)
    return 8


def _pow2(bits: np.ndarray) -> np.ndarray:
    """F32 [2, size]: ``2^E`` and ``2^-E`` of every value of the patterns ``bits`` (0 and
    2^127 for zero/subnormal, inf and -inf for Inf/NaN), in per-thread scratch."""
    size = bits.size
    sc = _scratch("pow2", 2 * size, np.uint32)
    np.bitwise_and(bits, 0x7F800000, out=sc[:size])
    np.subtract(np.uint32(0x7F000000), sc[:size], out=sc[size:])
    return sc.view(np.float32).reshape(2, size)


def _bounds(s: np.ndarray, rr: np.ndarray, p: int, j: int) -> np.ndarray:
    """The check's three bounds on the computed sums ``S`` and ``R`` of each set."""
    with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN/huge values fail
        ok = s * rr <= np.float32(2.0 ** (24 - p) * _MARGIN)
    ok &= s <= np.float32(2.0**100)
    ok &= rr <= np.float32(2.0 ** (127 - p - j) * _MARGIN)
    return ok


def exact_sets(bits: np.ndarray, n: int, p: int, j: int) -> np.ndarray:
    """The check of the module docstring for F32 patterns ``bits`` (flat; sets of ``n``
    consecutive values of at most ``p`` significant bits, terms scaled by ``2^-j``): a bool
    per set, True where every sum over the set is exact in any order."""
    v = _pow2(bits)
    sums = np.empty((2 * bits.size // n, 1), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        _rows_matmul(v.reshape(-1, n), np.ones((n, 1), np.float32), sums)
    return _bounds(sums[: bits.size // n, 0], sums[bits.size // n :, 0], p, j)


def _two_pairs(bits: np.ndarray, p: int, o: np.ndarray) -> np.ndarray:
    """g = 256 in the butterflies' order: ``U = (H_16·2^-4) @ X`` over the high index of each
    group X [16, 16], then ``U @ H_16`` over the low index, into ``o``. Returns per group
    whether both pairs are exact: every column of X passes the check, and every row of U
    has ``Σ|u|·R_max <= 2^(25-p-j)`` (R_max the largest column ``R``), which is the lemma
    for the row: all u are multiples of the finest column spacing ``2^(Emin-p+1-j) >=
    2^(1-p-j)/R_max``."""
    size, groups, j = bits.size, bits.size // 256, 4
    v3 = _pow2(bits).reshape(2 * groups, 16, 16)
    cols = np.empty((2 * groups, 1, 16), np.float32)
    ones = np.ones((1, 16), np.float32)
    step = max(1, _GEMM_ELEMS // 256)
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(0, 2 * groups, step):  # column sums of S and R, one product per group
            _matmul(ones, v3[r : r + step], out=cols[r : r + step])
        s, rr = cols[:groups, 0], cols[groups:, 0]  # [groups, 16]
        ok = _bounds(s.reshape(-1), rr.reshape(-1), p, j).reshape(groups, 16).all(axis=1)
        r_max = rr.max(axis=1)
        low, _ = _matrices(256)
        u = _scratch("u", size, np.float32)
        x3, u3 = bits.view(np.float32).reshape(groups, 16, 16), u.reshape(groups, 16, 16)
        for r in range(0, groups, step):
            _matmul(low, x3[r : r + step], out=u3[r : r + step])
        a = _scratch("abs", size, np.float32)
        np.abs(u, out=a)
        rows = np.empty((16 * groups, 1), np.float32)
        _rows_matmul(a.reshape(-1, 16), np.ones((16, 1), np.float32), rows)
        s_b = rows.reshape(groups, 16).max(axis=1)
        ok &= s_b * r_max <= np.float32(2.0 ** (25 - p - j) * _MARGIN)
        ok &= s_b <= np.float32(2.0**100)
        _rows_matmul(u.reshape(-1, 16), _matrices(16)[0] * np.float32(4), o.reshape(-1, 16))
    return ok


def rotate_block(x: np.ndarray, g: int, kind: str, out: np.ndarray) -> np.ndarray | None:
    """Per-group ``H_g·x`` of the rows ``x`` [m, k] (BF16, F16 or F32; ``g`` in
    :data:`GROUPS`) into ``out`` (C-contiguous F32 [m, k], not overlapping ``x``), rounded to
    ``kind``, right for every group that passes the check. Returns the indices (into
    ``x.reshape(-1, g)``) of the other groups, for the butterflies, or None when no route
    takes the block (``out`` untouched)."""
    size = x.size
    if x.dtype == BF16:
        xf = _scratch("xf", size, np.uint32)
        np.left_shift(x.view(np.uint16).reshape(-1), 16, out=xf, dtype=np.uint32)
    elif x.dtype == F16:
        xf = _scratch("xf", size, np.uint32)
        np.copyto(xf.view(np.float32), x.reshape(-1), casting="unsafe")
    else:
        xf = np.ascontiguousarray(x, np.float32).reshape(-1).view(np.uint32)
    p = _precision(x, xf, g)
    if not p:
        return None
    j = (g.bit_length() - 1) // 2
    head = min(size, _SAMPLE)
    if g < 256 and size > 2 * _SAMPLE and exact_sets(xf[:head], g, p, j).mean() < _WORTH:
        return None  # most groups would fail (zeros, wide spreads): the butterflies are faster
    if g == 256:
        ok = _two_pairs(xf, p, out.reshape(-1))
    else:
        ok = exact_sets(xf, g, p, j)
        with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN groups fail the check
            _products(xf.view(np.float32), g, out.reshape(-1))
    if kind != "f32":
        round_to(out, kind, out=out)
    return np.flatnonzero(~ok)


def _products(vals: np.ndarray, g: int, o: np.ndarray) -> None:
    """``o`` = every group of the flat ``vals`` times ``H_g``, by the route of the module
    docstring (exact, hence right, for the groups that pass the check)."""
    low, high = _matrices(g)
    if g == 16:
        _rows_matmul(vals.reshape(-1, 16), low, o.reshape(-1, 16))
        return
    u = _scratch("u", vals.size, np.float32)
    _rows_matmul(vals.reshape(-1, 16), low, u.reshape(-1, 16))
    a = high.shape[0]
    u3, o3 = u.reshape(-1, a, 16), o.reshape(-1, a, 16)
    step = max(1, _GEMM_ELEMS // (a * a * 16))
    for r in range(0, u3.shape[0], step):  # one small product per group
        _matmul(high, u3[r : r + step], out=o3[r : r + step])


@functools.cache
def blas_is_exact() -> bool:
    """Start-up test of the BLAS numpy uses: on groups whose exact sums need 23 of F32's 24
    bits (7-bit mantissas at 2^-1..2^0 beside one value as small as the check allows) and on
    random BF16 weights, the GEMM route must give the butterflies' bits. A BLAS that sums in
    less than F32 precision, or not rounding to nearest, fails: the butterflies run instead."""
    rng = np.random.default_rng(2028)
    for g, small in ((16, 12), (64, 10)):  # the smallest exponent with S·R still below 2^16
        rows = 128
        exp = rng.integers(-1, 1, (rows, g))
        exp[:, 0] = -small
        mant = rng.integers(128, 256, (rows, g)) / 128.0
        edge = np.ldexp(mant * rng.choice([-1.0, 1.0], (rows, g)), exp)
        weights = rng.standard_normal((rows, g)) * 0.02
        x = np.concatenate([edge, weights]).astype(np.float32).astype(BF16)
        out = np.empty(x.shape, np.float32)
        left = rotate_block(x, g, "f32", out)
        if left is None or np.count_nonzero(left < rows) > rows // 8:
            return False
        keep = np.ones(x.shape[0], bool)
        keep[left] = False
        if not np.array_equal(out[keep].view(np.uint32), fwht(x[keep], g).view(np.uint32)):
            return False
    return True


def rotate(
    x: np.ndarray, g: int, kind: str = "f32", block: int = 1 << 18, out: np.ndarray | None = None
) -> np.ndarray:
    """:func:`quantcheck.numeric.hadamard.rotate` with this route for the groups that pass
    the check (same arguments, same bits)."""
    n, k = x.shape
    check_group(g)
    if k % g:
        raise NumericError(f"K={k} is not divisible by convrot_groupsize {g}")
    rows = block_rows(k, block)
    if out is None:
        out = np.empty((n, k), np.float32)
    route = (
        g in GROUPS
        and out.flags.c_contiguous
        and not np.may_share_memory(x, out)
        and blas_is_exact()
    )
    for r in range(0, n, rows):
        xb, ob = x[r : r + rows], out[r : r + rows]
        left = rotate_block(xb, g, kind, ob) if route else None
        if left is None:
            fwht(xb, g, out=ob, kind=kind)
        elif left.size:  # the groups whose sums are not provably exact: the butterflies
            ob.reshape(-1, g)[left] = fwht(xb.reshape(-1, g)[left], g, kind=kind)
    return out


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """The rotated codecs (int8 ConvRot, convrot_w4a4, W4A8/W6A8) rotate by :func:`rotate`
    while the context is open."""
    saved = [(m, m.rotate) for m in (int8, w4a4, w4a8)]
    try:
        for m, _ in saved:
            m.rotate = rotate  # type: ignore[attr-defined]
        yield
    finally:
        for m, fn in saved:
            m.rotate = fn  # type: ignore[attr-defined]
