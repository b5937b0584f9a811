"""benchmarks/rotation_gemm.py, the BLAS route measured against the butterflies (issue 28),
gives the butterflies' bits: this is what makes its timings comparable.

Three layers: the check is sound (a set it passes really has every partial sum exact, shown
with exact float64/integer arithmetic on random exponent spreads straddling its limit, and
every set whose sums depend on the order is rejected); the route equals the spelled-out
fixed order (``reference`` of test_rotation_reference) on groups straddling the check, with
Inf/NaN/±0/subnormals, every group size, three input dtypes and 1-3 threads, with the passing
groups compared before any fallback; and the codecs write the same bytes through it. A BLAS
that sums inexactly is refused by its start-up test."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from test_rotation_reference import reference, same_bits

from quantcheck.numeric import dequantize, hadamard, parallel, quantize

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import rotation_gemm  # a benchmark module, not part of the package

BF = ml_dtypes.bfloat16
DTYPES = [(BF, 8), (np.float16, 11)]


def spread_groups(rows: int, g: int, dtype: type, seed: int, max_spread: int) -> np.ndarray:
    """[rows, g] values whose exponents within a group span 0..max_spread binades (the
    spread itself drawn per group), random mantissas and signs: about half the groups lie
    on each side of the check's limit."""
    rng = np.random.default_rng(seed)
    spread = rng.integers(0, max_spread + 1, (rows, 1))
    base = rng.integers(-20, 10, (rows, 1))
    exp = base - (rng.random((rows, g)) * (spread + 1)).astype(np.int64)
    mant = rng.uniform(1.0, 2.0, (rows, g)) * rng.choice([-1.0, 1.0], (rows, g))
    return np.ldexp(mant, exp).astype(np.float32).astype(dtype)


def premise_holds(x: np.ndarray, j: int) -> np.ndarray:
    """Per row of ``x`` [rows, n]: the lemma's premise checked exactly — terms ``x·2^-j``
    nonzero multiples of ``2^q`` (the largest such power, from the integer significands),
    ``q >= -126`` and ``Σ|t| <= 2^(24+q)``."""
    t = x.astype(np.float64) * 2.0**-j  # exact: F32 values times a power of two
    m, e = np.frexp(t)  # t = m·2^e, |m| in [0.5, 1)
    ints = (np.abs(m) * 2.0**53).astype(np.uint64)
    low = ints & (~ints + np.uint64(1))  # lowest set bit of each significand
    q = np.where(t == 0, 10**6, np.log2(np.maximum(low, 1).astype(np.float64)) - 53 + e)
    q = q.min(axis=1)
    total = np.abs(t).sum(axis=1)  # float64: exact (spreads here stay below 40 binades)
    return (t != 0).all(axis=1) & (q >= -126) & (total <= np.ldexp(1.0, (24 + q).astype(int)))


def premise_holds_with_zeros(t: np.ndarray) -> np.ndarray:
    """:func:`premise_holds` for float64 terms that may be +0 (never -0): the zeros drop
    out of the spacing, the rest as above."""
    nonzero = np.where(t == 0, np.nan, t)
    ok = ~np.signbit(np.where(t == 0, t, 1.0)).any(axis=1)  # no -0
    rows = []
    for row in nonzero:
        vals = row[~np.isnan(row)]
        rows.append(premise_holds(vals[None, :], 0)[0] if vals.size else True)
    return ok & np.array(rows)


@pytest.mark.parametrize("n", [16, 64])
@pytest.mark.parametrize("dtype,p", DTYPES)
def test_check_passes_only_sets_whose_sums_are_exact(n, dtype, p):
    j = (n.bit_length() - 1) // 2
    for seed in range(6):
        x = spread_groups(4000, n, dtype, seed, 16)
        bits = x.astype(np.float32).reshape(-1).view(np.uint32).copy()
        ok = rotation_gemm.exact_sets(bits, n, p, j)
        holds = premise_holds(x.astype(np.float32), j)
        assert not (ok & ~holds).any()  # sound: every passing set is exact
        if p == 8 or n == 16:  # not vacuous; and it gives up few exact sets
            assert ok.mean() > 0.25 and (~ok & holds).mean() < 0.5


def test_two_pairs_pass_only_groups_whose_stage_pairs_are_exact():
    """g = 256: for every group the route passes, the columns of X (the first stage pair's
    sets) and the rows of U = H_16·X·2^-4 (the second pair's, computed exactly in float64)
    satisfy the lemma's premise, checked exactly."""
    x = spread_groups(3000, 256, BF, 21, 16).astype(np.float32)
    out = np.empty(x.shape, np.float32)
    left = rotation_gemm.rotate_block(x.astype(BF), 256, "f32", out)
    passed = np.ones(x.shape[0], bool)
    passed[left] = False
    assert 0.2 < passed.mean() < 0.9  # both sides of the limit are exercised
    xs = x[passed].reshape(-1, 16, 16)
    cols = xs.transpose(0, 2, 1).reshape(-1, 16)
    assert premise_holds(cols, 4).all()
    h = np.sign(hadamard.hadamard(16)).astype(np.float64)
    u = np.einsum("ab,pbl->pal", h, xs.astype(np.float64) * 2.0**-4)  # exact in float64
    assert premise_holds_with_zeros(u.reshape(-1, 16)).all()


def limit_set(d: int) -> np.ndarray:
    """15 values ±1.9921875 (the largest 8-bit significand) and one ±1.0078125·2^-d, signed
    like the first row of H_16: that output is Σ|x|/4, which needs 24 bits of F32 at d = 12
    and 25 at d = 13 (the spacing of the small term's x·2^-2 is 2^-(d+9))."""
    x = np.concatenate([np.full(15, 1.9921875), [1.0078125 * 2.0**-d]])
    return (x * np.sign(hadamard.hadamard(16)[0])).astype(np.float32)


def test_check_limit_straddled_exactly():
    """d = 12 passes, d = 13 fails; a zero of either sign, a subnormal, Inf and NaN fail."""
    rows = [limit_set(12), limit_set(13)]
    for odd in (0.0, -0.0, 2.0**-130, np.inf, np.nan):
        rows.append(np.concatenate([limit_set(12)[:15], [np.float32(odd)]]))
    x = np.array(rows, np.float32).astype(BF)
    bits = x.astype(np.float32).reshape(-1).view(np.uint32).copy()
    ok = rotation_gemm.exact_sets(bits, 16, 8, 2)
    assert ok.tolist() == [True] + [False] * 6
    top = np.abs(x[:2].astype(np.float64)).sum(axis=1) / 4  # output 0, exactly
    assert top[0] / 2.0**-21 > 2**23 and top[1] / 2.0**-22 > 2**24
    out = np.empty((1, 16), np.float32)
    assert rotation_gemm.rotate_block(x[:1], 16, "f32", out).size == 0
    assert same_bits(out, reference(x[:1], 16, "f32"))
    assert out[0, 0] == np.float32(top[0])  # exact, all 24 bits


@pytest.mark.parametrize("n", [16, 64])
def test_every_order_dependent_set_is_rejected(n):
    """The check matters: among random sets straddling its limit, many have sums whose bits
    depend on the order (left to right, right to left, the butterflies); the check rejects
    every one of them, so such a set never reaches BLAS."""
    j = (n.bit_length() - 1) // 2
    x = spread_groups(3000, n, BF, 11, 22).astype(np.float32)
    terms = x[:, None, :] * hadamard.hadamard(n)[None, :, :]  # exact: the terms x·(±2^-j)
    fwd = np.zeros(terms.shape[:2], np.float32)
    for k in range(n):
        fwd = fwd + terms[:, :, k]
    rev = np.zeros(terms.shape[:2], np.float32)
    for k in reversed(range(n)):
        rev = rev + terms[:, :, k]
    fly = reference(x, n, "f32")

    def differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a.view(np.uint32) != b.view(np.uint32)).any(axis=1)

    dependent = differ(fwd, fly) | differ(rev, fly) | differ(fwd, rev)
    assert dependent.sum() > 50
    ok = rotation_gemm.exact_sets(x.reshape(-1).view(np.uint32).copy(), n, 8, j)
    assert not (ok & dependent).any()
    assert ok.sum() > 500


def hostile_groups(rows: int, g: int, dtype: type, seed: int) -> np.ndarray:
    """Straddling spreads plus, in some groups, ±0, subnormals, Inf and NaN."""
    spread = {16: 14, 64: 10}.get(g, 5) if dtype is BF else 6  # about half the groups pass
    x = spread_groups(rows, g, dtype, seed, spread).astype(np.float32)
    rng = np.random.default_rng(seed + 1)
    flat = x.reshape(-1)
    tiny = 2.0**-130 if dtype is BF else 2.0**-20  # subnormal in BF16 / in F16
    for value in (0.0, -0.0, tiny, -tiny, np.inf, -np.inf, np.nan):
        flat[rng.integers(0, flat.size, max(1, flat.size // 2000))] = value
    x[: rows // 8] = np.float32(0)  # whole zero groups
    x[rows // 8 : rows // 4] = np.float32(-0.0)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


CASES = [
    (BF, "bf16"),
    (BF, "f32"),
    (np.float16, "f16"),
    ("f32-bf16-values", "bf16"),
    ("f32-bf16-values", "f32"),
    (np.float32, "f32"),
]


@pytest.mark.parametrize("g", [16, 64, 256])
@pytest.mark.parametrize("dtype,kind", CASES)
def test_route_gives_the_reference_bits(monkeypatch, g, dtype, kind):
    monkeypatch.setattr(rotation_gemm, "_WORTH", 0.0)  # take hostile blocks too
    if dtype == "f32-bf16-values":  # F32 holding BF16 values: the route takes them
        x = hostile_groups(600, g, BF, g).astype(np.float32)
    else:
        x = hostile_groups(600, g, dtype, g)
    x = x.reshape(-1, 2 * g)
    want = reference(x, g, kind)
    assert same_bits(rotation_gemm.rotate(x, g, kind), want)
    if g not in rotation_gemm.GROUPS:
        return
    out = np.full(x.shape, np.nan, np.float32)
    left = rotation_gemm.rotate_block(x, g, kind, out)
    if left is None:  # no route for wider F32 values, nor for F16 at g = 64 and 256
        assert dtype is np.float32 or (dtype is np.float16 and g > 16)
        return
    passed = np.ones(out.size // g, bool)
    passed[left] = False
    assert passed.mean() > 0.2  # the route's own results are what is compared here
    assert same_bits(out.reshape(-1, g)[passed], want.reshape(-1, g)[passed])


def test_blocks_with_few_passing_groups_take_the_butterflies():
    """Zeros in most groups: the block goes to fwht whole (faster), with the same bits."""
    x = (np.random.default_rng(5).standard_normal((64, 1024)) * 0.02).astype(BF)
    x[:, ::16] = np.float32(0)  # one zero in every group of 16
    out = np.empty(x.shape, np.float32)
    assert rotation_gemm.rotate_block(x, 16, "bf16", out) is None
    assert same_bits(rotation_gemm.rotate(x, 16, "bf16"), reference(x, 16, "bf16"))
    x[:, ::16] = np.float32(0.01)
    assert rotation_gemm.rotate_block(x, 16, "bf16", out).size < 64 * 1024 // 16 // 20


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_route_in_the_thread_pool(monkeypatch, threads):
    monkeypatch.setenv("QUANTCHECK_THREADS", threads)
    x = (np.random.default_rng(7).standard_normal((301, 1024)) * 0.02).astype(BF)
    x[5, :64] = np.float32(-0.0)
    wants = {g: reference(x, g, "bf16") for g in (16, 64, 256)}
    outs = {g: np.empty(x.shape, np.float32) for g in wants}

    def work(rows: slice) -> None:
        for g, out in outs.items():
            rotation_gemm.rotate(x[rows], g, "bf16", out=out[rows])

    parallel.for_each(work, x.shape[0], 7)
    for g, out in outs.items():
        assert same_bits(out, wants[g]), g


@pytest.mark.parametrize("g", [16, 64])
def test_passing_sums_are_the_same_in_every_order(g):
    """On groups the check passes, other summation orders (left to right, right to left, a
    random permutation, float64) all give the butterflies' bits: what the route relies on."""
    x = (np.random.default_rng(g).standard_normal((400, g)) * 0.02).astype(BF)
    bits = x.astype(np.float32).reshape(-1).view(np.uint32).copy()
    j = (g.bit_length() - 1) // 2
    ok = rotation_gemm.exact_sets(bits, g, 8, j)
    assert ok.mean() > 0.9
    xs = x.astype(np.float32)[ok]
    want = reference(xs, g, "f32")
    terms = xs[:, None, :] * hadamard.hadamard(g)[None, :, :]  # exact products
    rng = np.random.default_rng(1)
    for order in (np.arange(g), np.arange(g)[::-1], rng.permutation(g)):
        acc = np.zeros(terms.shape[:2], np.float32)
        for k in order:
            acc = acc + terms[:, :, k]
        assert np.array_equal(acc.view(np.uint32), want.view(np.uint32))
    f64 = terms.astype(np.float64).sum(axis=2)
    assert np.array_equal(f64.astype(np.float32).view(np.uint32), want.view(np.uint32))


def test_an_inexact_blas_is_refused(monkeypatch):
    """A BLAS summing in BF16 precision fails the start-up test; the butterflies run."""

    def bf16_matmul(a, b, out=None):
        acc = np.zeros(np.matmul(a[..., :1], b[..., :1, :]).shape, np.float32)
        for k in range(a.shape[-1]):
            acc = (acc + a[..., k : k + 1] * b[..., k : k + 1, :]).astype(BF).astype(np.float32)
        if out is not None:
            out[...] = acc
            return out
        return acc

    monkeypatch.setattr(rotation_gemm, "_matmul", bf16_matmul)
    rotation_gemm.blas_is_exact.cache_clear()
    try:
        assert not rotation_gemm.blas_is_exact()
        x = (np.random.default_rng(3).standard_normal((40, 256)) * 0.02).astype(BF)
        assert same_bits(rotation_gemm.rotate(x, 16, "bf16"), reference(x, 16, "bf16"))
    finally:
        monkeypatch.undo()
        rotation_gemm.blas_is_exact.cache_clear()
    assert rotation_gemm.blas_is_exact()


ROTATED = [
    ("int8_tensorwise", {"convrot": True}, "convrot_groupsize"),
    ("convrot_w4a4", {}, "convrot_groupsize"),
    ("asym_w4a8_int8", {"symmetric": False}, "convrot_groupsize"),
    ("asym_w4a8_int8", {}, "convrot_groupsize"),
    ("w6a8_int8", {}, "convrot_groupsize"),
]


@pytest.mark.parametrize("fmt,opts,gkey", ROTATED)
@pytest.mark.parametrize("g", [16, 64])
@pytest.mark.parametrize("dtype", [BF, np.float16, np.float32])
def test_codecs_write_the_same_bytes_by_either_route(fmt, opts, gkey, g, dtype):
    x = (np.random.default_rng(g).standard_normal((48, 256)) * 0.02).astype(np.float32)
    x[3, :g] = 0.0
    x[4, 5] = 2.0**-40  # a tiny value: its group fails the check
    if dtype is np.float32:
        x[::2] = x[::2].astype(BF).astype(np.float32)
    x = x.astype(dtype)

    def run() -> tuple[dict, bytes]:
        q = quantize(x, fmt, **opts, **{gkey: g})
        back = dequantize(fmt, q.arrays(), q.marker, x.shape)
        return {k: v.tobytes() for k, v in q.arrays().items()}, back.tobytes()

    with rotation_gemm.patched():
        assert rotation_gemm.w4a4.rotate is rotation_gemm.rotate
        gemm = run()
    assert rotation_gemm.w4a4.rotate is hadamard.rotate
    assert gemm == run()
