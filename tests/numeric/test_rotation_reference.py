"""The fast rotation (:func:`.hadamard.rotate`) gives the bits of a straightforward
implementation of the fixed order: terms ``x·2^-j`` in F32, then the radix-4 butterfly
along each radix axis of a group, most significant first, each output the same two F32
adds; the BF16/F16 rounding once at the end. Inputs include Inf, NaN, subnormals and terms
that underflow; shapes cover padded and unpadded scratch rows, block sizes and thread counts.

NaN outputs are compared as NaN (their sign and payload follow numpy's loops and are not
part of the numeric contract: every codec refuses non-finite rotated values)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from quantcheck.numeric import hadamard, lowp, parallel


def reference(x: np.ndarray, g: int, kind: str) -> np.ndarray:
    """Today's order, spelled out on [rows·K/g, 4, ..., 4] views (no transposes, no scratch)."""
    j = (g.bit_length() - 1) // 2
    n, k = x.shape
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(np.float32).reshape(-1, g) * np.float32(2.0**-j)
        for ax in range(1, j + 1):
            v = t.reshape(t.shape[0], 4 ** (ax - 1), 4, 4 ** (j - ax))
            t0, t1, t2, t3 = v[:, :, 0], v[:, :, 1], v[:, :, 2], v[:, :, 3]
            s01, d01, s23, d23 = t0 + t1, t0 - t1, t2 + t3, t2 - t3
            y = np.stack([s01 + d23, s01 - d23, d01 + s23, s23 - d01], axis=2)
            t = y.reshape(-1, g)
    out = t.reshape(n, k)
    return out if kind == "f32" else lowp.round_to(out.copy(), kind)


def hostile(n: int, k: int, seed: int, dtype: type = np.float32) -> np.ndarray:
    """Values over the dtype's exponent range (subnormals included), a few Inf and NaN."""
    rng = np.random.default_rng(seed)
    low, high = (-26, 12) if dtype is np.float16 else (-149, 60)
    e = rng.integers(low, high, (n, k))
    x = np.ldexp(rng.uniform(0.5, 1.0, (n, k)) * rng.choice([-1, 1], (n, k)), e)
    x = x.astype(np.float32)
    flat = x.reshape(-1)
    for value in (np.inf, -np.inf, np.nan, 0.0, -0.0, np.float32(1e-45)):
        flat[rng.integers(0, flat.size, max(1, flat.size // 3001))] = value
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a)
    if not np.array_equal(nan, np.isnan(b)):
        return False
    return np.array_equal(a.view(np.uint32)[~nan], b.view(np.uint32)[~nan])


SHAPES = [(1, 4096), (3, 1024), (37, 768), (256, 256), (64, 3072)]
KINDS = [("f32", np.float32), ("bf16", ml_dtypes.bfloat16), ("f16", np.float16)]


@pytest.mark.parametrize("g", [4, 16, 64, 256])
@pytest.mark.parametrize("kind,dtype", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_rotate_matches_the_reference_order(g, kind, dtype, shape):
    x = hostile(*shape, g + shape[0], dtype)
    want = reference(x, g, kind)
    assert np.isnan(want).any() and np.isfinite(want).mean() > 0.5  # hostile, yet mostly finite
    for block in (1, 3 * shape[1], 1 << 15, 1 << 18, 1 << 22):
        assert same_bits(hadamard.rotate(x, g, kind, block=block), want), block


@pytest.mark.parametrize("g", [16, 256])
def test_finite_values_and_underflowing_terms(g):
    rng = np.random.default_rng(g)
    x = np.ldexp(rng.standard_normal((50, 3 * g)), rng.integers(-149, -110, (50, 3 * g)))
    x = x.astype(np.float32)  # many subnormal terms: x·2^-j underflows
    assert (np.abs(x) < np.finfo(np.float32).tiny).mean() > 0.3
    got = hadamard.rotate(x, g)
    assert np.array_equal(got.view(np.uint32), reference(x, g, "f32").view(np.uint32))
    assert (got != 0).any()


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_rotation_in_the_thread_pool_keeps_the_bits(monkeypatch, threads):
    """Each pool thread reuses its own scratch; interleaved shapes must not leak into results."""
    monkeypatch.setenv("QUANTCHECK_THREADS", threads)
    x = hostile(300, 1024, 5, ml_dtypes.bfloat16)
    wants = {g: reference(x, g, "bf16") for g in (16, 64, 256)}
    outs = {g: np.empty(x.shape, np.float32) for g in wants}

    def work(rows: slice) -> None:
        for g, out in outs.items():  # three group sizes through the same scratch
            hadamard.rotate(x[rows], g, "bf16", out=out[rows])

    parallel.for_each(work, x.shape[0], 7)
    for g, out in outs.items():
        assert same_bits(out, wants[g]), g


def test_in_place_output():
    x = hostile(41, 512, 9)
    want = reference(x, 64, "f32")
    assert same_bits(hadamard.rotate(x, 64, out=x), want)


def test_block_rows_are_odd_and_cover_the_block():
    assert hadamard.block_rows(3072) == 85  # 2^18 // 3072 = 85 (odd already)
    assert hadamard.block_rows(4096) == 63  # 64 would give a power-of-two scratch stride
    assert hadamard.block_rows(1 << 20) == 1  # one row longer than the block
    assert hadamard.block_rows(256, block=1024) == 3
