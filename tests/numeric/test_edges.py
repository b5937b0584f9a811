"""Edge cases: refusals, zeros, E2M1 ties, nibble order, swizzle offsets, bytes, metrics."""

from __future__ import annotations

import math
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from helpers import BF16, mismatches, weights

from quantcheck.numeric import NumericError, arrays, dequantize, e2m1, nibbles, quantize, swizzle
from quantcheck.numeric.metrics import ErrorAccumulator, error_metrics

ALL = [
    ("float8_e4m3fn", {}),
    ("float8_e5m2", {}),
    ("int8_tensorwise", {}),
    ("int8_tensorwise", {"per_row": True}),
    ("int8_tensorwise", {"convrot": True}),
    ("nvfp4", {}),
    ("mxfp8", {}),
    ("convrot_w4a4", {}),
    ("asym_w4a8_int8", {}),
    ("asym_w4a8_int8", {"symmetric": False}),
    ("asym_w4a8_int8", {"bits": 6}),
]


@pytest.mark.parametrize(("fmt", "opts"), ALL, ids=str)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_refused(fmt, opts, bad):
    w = weights(32, 256, BF16, seed=1)
    w[3, 17] = bad
    with pytest.raises(NumericError, match="NaN/Inf"):
        quantize(w, fmt, **opts)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2", "nvfp4"])
def test_all_zero_refused_where_ck_writes_nan(ck, fmt):
    w = np.zeros((32, 64), BF16)
    theirs = ck.ck_quantize(w, fmt)
    blob = theirs["weight_scale" if fmt == "nvfp4" else "weight"]
    assert np.isnan(blob.astype(np.float32)).any()  # the oracle really writes NaN
    with pytest.raises(NumericError, match="all-zero"):
        quantize(w, fmt)


def test_fp8_tiny_amax_refused():
    w = np.zeros((4, 16), np.float32)
    w[0, 0] = 1e-37
    with pytest.raises(NumericError, match="not finite"):
        quantize(w, "float8_e4m3fn")


@pytest.mark.parametrize(
    ("fmt", "opts"),
    [
        ("int8_tensorwise", {}),
        ("int8_tensorwise", {"per_row": True}),
        ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 16}),
        ("mxfp8", {}),
        ("convrot_w4a4", {"convrot_groupsize": 64}),
        ("asym_w4a8_int8", {}),
        ("asym_w4a8_int8", {"codebook": False}),
        ("asym_w4a8_int8", {"bits": 6}),
        ("asym_w4a8_int8", {"symmetric": False}),
    ],
    ids=str,
)
def test_all_zero_matches_ck(ck, fmt, opts):
    w = np.zeros((40, 256), BF16)
    layer = quantize(w, fmt, **opts)
    theirs = ck.ck_quantize(w, fmt, **opts)
    for key, arr in layer.arrays().items():
        assert mismatches(arr, theirs[key]) == 0, key
    out = dequantize(fmt, layer.arrays(), layer.marker, (40, 256))
    assert np.isfinite(out).all() and np.abs(out).max() < 1e-9


def test_mxfp8_tiny_block_refused(ck):
    w = weights(32, 64, np.float32, seed=2)
    w[5, 32:64] = 1e-40  # whole block 1 of row 5: 0 < amax <= 448·2^-127
    theirs = ck.ck_quantize(w, "mxfp8")
    assert (
        np.isnan(theirs["weight"].astype(np.float32)).any()
        or (np.abs(theirs["weight"].astype(np.float32)[5, 32:64]) == 448).all()
    )
    with pytest.raises(NumericError, match="row 5, block 1"):
        quantize(w, "mxfp8")


def test_mxfp8_exponent_boundaries(ck):
    """Blocks whose amax sits exactly on and just above powers of two (F32 input)."""
    w = weights(32, 320, np.float32, seed=4)
    for j, k in enumerate(range(-20, 20, 4)):
        amax = np.float32(448 * 2.0**k)
        w[j, 32 * (j % 10)] = amax if j % 2 else np.nextafter(amax, np.float32(np.inf))
    ours = quantize(w, "mxfp8").arrays()
    theirs = ck.ck_quantize(w, "mxfp8")
    assert mismatches(ours["weight_scale"], theirs["weight_scale"]) == 0
    assert mismatches(ours["weight"], theirs["weight"]) == 0


def test_e2m1_ties_and_table():
    x = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, -0.25, -0.1, 6.0], np.float32)
    got = e2m1.decode(e2m1.encode(x))
    want = [0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, -0.0, -0.0, 6.0]
    assert got.tolist() == want
    assert np.signbit(got[-2]) and e2m1.encode(x)[-2] == 8  # small negative -> code 8 (-0)
    assert e2m1.decode(np.arange(16, dtype=np.uint8)).tolist()[:8] == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_nvfp4_nibble_order():
    w = np.zeros((16, 16), np.float32)
    w[0, :2] = [6.0, 0.25]
    w[1:, :] = 1.0
    q = quantize(w, "nvfp4").arrays()["weight"]
    assert q.dtype == np.uint8 and q[0, 0] == 0x70
    assert nibbles.unpack_hi_first(q)[0, :2].tolist() == [7, 0]
    # The other convention puts element 0 in the low nibble.
    assert nibbles.pack_lo_first(np.array([[7, 0]], np.uint8)).view(np.uint8)[0, 0] == 0x07


def test_nibble_roundtrips():
    rng = np.random.default_rng(0)
    c = rng.integers(0, 16, (5, 64), dtype=np.uint8)
    assert np.array_equal(nibbles.unpack_hi_first(nibbles.pack_hi_first(c)), c)
    assert np.array_equal(nibbles.unpack_lo_first(nibbles.pack_lo_first(c)), c)
    s = rng.integers(-8, 8, (5, 64)).astype(np.int8)
    assert np.array_equal(nibbles.unpack_signed_lo_first(nibbles.pack_lo_first(s)), s)
    c6 = rng.integers(0, 64, (5, 64), dtype=np.uint8)
    p6 = nibbles.pack6(c6)
    assert p6.shape == (5, 48) and np.array_equal(nibbles.unpack6(p6, 64), c6)
    # column 5 of row 0: high bits at byte 32 + 5//4, bits 2*(5%4)
    assert (p6.view(np.uint8)[0, 32 + 1] >> 2) & 3 == c6[0, 5] >> 4


@pytest.mark.parametrize(("rows", "cols"), [(128, 4), (130, 5), (1, 1), (300, 13)])
def test_swizzle_offsets(ck, rows, cols):
    import torch
    from comfy_kitchen.float_utils import to_blocked

    s = np.arange(rows * cols, dtype=np.int32).reshape(rows, cols) % 251 + 1
    sw = swizzle.swizzle(s.astype(np.uint8))
    assert sw.shape == swizzle.swizzled_shape(rows, cols)
    flat = sw.ravel()
    for r in range(rows):
        for c in range(cols):
            assert flat[swizzle.swizzle_offset(r, c, cols)] == s[r, c]
    assert np.count_nonzero(flat) == rows * cols  # padding is zero
    ref = to_blocked(torch.from_numpy(s.astype(np.uint8)), flatten=False).numpy()
    assert np.array_equal(sw, ref)
    assert np.array_equal(swizzle.unswizzle(sw, rows, cols), s.astype(np.uint8))


def test_padded_shapes_and_marker():
    w = weights(100, 200, BF16, seed=3)
    nv = quantize(w, "nvfp4")
    assert nv.tensors["weight"][1].shape == (112, 104)
    assert nv.tensors["weight_scale"][0] == "F8_E4M3"
    assert nv.tensors["weight_scale"][1].shape == (128, 16)
    assert nv.tensors["weight_scale_2"][1].shape == ()
    assert nv.marker == {"format": "nvfp4", "orig_shape": [100, 200]}
    mx = quantize(w, "mxfp8")
    assert mx.tensors["weight"][1].shape == (128, 224)
    assert mx.tensors["weight_scale"][0] == "U8" and mx.tensors["weight_scale"][1].shape == (128, 8)
    full = dequantize("nvfp4", nv.arrays())
    assert full.shape == (112, 208) and not full[100:].any() and not full[:, 200:].any()
    assert dequantize("nvfp4", nv.arrays(), nv.marker).shape == (100, 200)
    assert dequantize("mxfp8", mx.arrays(), shape=(99, 193)).shape == (99, 193)
    with pytest.raises(NumericError, match="does not fit"):
        dequantize("mxfp8", mx.arrays(), shape=(60, 200))
    aligned = quantize(weights(128, 256, BF16, seed=3), "nvfp4")
    assert "orig_shape" not in aligned.marker


def test_markers_and_dtypes():
    w = weights(64, 256, BF16, seed=8)
    m = quantize(w, "asym_w4a8_int8", symmetric=False).marker
    assert m == {
        "format": "asym_w4a8_int8",
        "group_size": 16,
        "convrot_groupsize": 256,
        "convrot": True,
    }
    t = quantize(w, "asym_w4a8_int8", symmetric=False).tensors
    assert t["weight_correction"][0] == "BF16" and t["weight_correction"][1].shape == (16, 64)
    assert t["weight_s_rel"][0] == "F8_E4M3" and t["weight_s_channel"][1].shape == (64,)
    i8 = quantize(w, "int8_tensorwise", convrot=True, convrot_groupsize=64)
    assert i8.marker == {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 64}
    assert i8.tensors["weight_scale"][1].shape == (64, 1)
    assert quantize(w, "int8_tensorwise").tensors["weight_scale"][1].shape == ()
    w4 = quantize(w, "convrot_w4a4", convrot_groupsize=16, linear_dtype="int8")
    assert w4.marker == {"format": "convrot_w4a4", "convrot_groupsize": 16, "linear_dtype": "int8"}
    assert w4.tensors["weight_scale"][1].shape == (64,)
    # params fallback in the marker, as ComfyUI reads it
    p = {"format": "convrot_w4a4", "params": {"convrot_groupsize": 16}}
    a, b = dequantize(None, w4.arrays(), p), dequantize(None, w4.arrays(), w4.marker)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("fmt", "opts", "msg"),
    [
        ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 128}, "power of 4"),
        ("convrot_w4a4", {"convrot_groupsize": 16}, "divisible by 64"),
        ("asym_w4a8_int8", {"group_size": 12}, "group_size"),
        (
            "asym_w4a8_int8",
            {"bits": 6, "symmetric": False, "convrot_groupsize": 16},
            "symmetric only",
        ),
        ("nvfp4", {"group_size": 32}, "unknown option"),
        ("awq_w4a16", {}, "no quantizer"),
        ("int4_magic", {}, "unknown format"),
    ],
    ids=str,
)
def test_bad_options(fmt, opts, msg):
    with pytest.raises(NumericError, match=msg):
        quantize(weights(16, 96 if opts.get("bits") else 48, np.float32, seed=0), fmt, **opts)


def test_bad_input_dtype():
    with pytest.raises(NumericError, match="float32, float16 or bfloat16"):
        quantize(np.zeros((4, 16), np.float64), "mxfp8")


def test_arrays_bytes_roundtrip():
    rng = np.random.default_rng(0)
    for name in arrays.DTYPE_NAMES:
        dt = arrays.numpy_dtype(name)
        raw = rng.integers(0, 256, 6 * dt.itemsize, dtype=np.uint8).tobytes()
        a = arrays.from_bytes(name, [2, 3], memoryview(raw))
        assert a.shape == (2, 3) and arrays.dtype_name(a) == name
        assert arrays.to_bytes(a) == raw
    assert arrays.from_bytes("F32", [], np.float32(1.5).tobytes()).shape == ()
    assert arrays.from_bytes("BF16", [1], b"\x80\x3f")[0] == ml_dtypes.bfloat16(1.0)
    assert arrays.from_bytes("F8_E8M0", [1], b"\x7f")[0].astype(np.float32) == 1.0
    assert arrays.to_bytes(np.array([1], ">i4")) == b"\x01\x00\x00\x00"
    with pytest.raises(NumericError, match="needs 8 bytes"):
        arrays.from_bytes("F32", [2], b"\x00" * 4)
    with pytest.raises(NumericError, match="unsupported"):
        arrays.from_bytes("F4", [2], b"\x00")


def test_metrics():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    m = error_metrics(a, a)
    assert (m.max_abs, m.rel_l2, m.cosine, m.snr_db) == (0.0, 0.0, 1.0, math.inf)
    m = error_metrics(a, a * 1.1)
    assert m.rel_l2 == pytest.approx(0.1) and m.snr_db == pytest.approx(20.0)
    assert m.cosine == pytest.approx(1.0) and m.max_abs == pytest.approx(0.3)
    z = np.zeros(3)
    assert error_metrics(z, z).rel_l2 == 0.0 and error_metrics(z, z).cosine == 1.0
    m = error_metrics(z, a)
    assert m.rel_l2 == math.inf and m.snr_db == -math.inf and m.cosine == 0.0
    acc = ErrorAccumulator()
    acc.update(a[:2], -a[:2])
    acc.update(a[2:], -a[2:])
    assert acc.result().cosine == pytest.approx(-1.0) and acc.result().count == 3
    assert math.isnan(error_metrics(np.array([np.nan]), np.array([1.0])).rel_l2)


def test_import_is_lazy():
    code = (
        "import sys, quantcheck, quantcheck.numeric; "
        "from quantcheck.numeric import NumericError; "
        "assert 'numpy' not in sys.modules, 'numpy imported'; "
        "quantcheck.numeric.quantize; assert 'numpy' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("fmt", "opts"), ALL, ids=str)
@pytest.mark.parametrize("dt", [np.float32, BF16, np.float16])
def test_input_not_modified(fmt, opts, dt):
    w = weights(40, 256, dt, seed=12)
    before = w.copy()
    w.setflags(write=False)  # like arrays.from_bytes() results: any in-place write raises
    try:
        quantize(w, fmt, **opts)
    except NumericError:  # float16 -> e5m2: 1/scale overflows, refused (see test_parity)
        assert fmt == "float8_e5m2" and dt is np.float16
    assert mismatches(w, before) == 0
