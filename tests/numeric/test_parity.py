"""The numeric contract against comfy-kitchen's CPU eager backend, both directions.

Elementwise formats (fp8, int8 scalar/row-wise, nvfp4, mxfp8, awq, the W4A8 int8 grid) and
every dequantize without a rotation: bit-exact. Rotated formats (int8 ConvRot, convrot_w4a4,
asym_w4a8_int8): ck's values must lie in the interval that holds for every summation order of
the rotation (see contract.py); codes may differ only where that interval straddles a rounding
boundary. Nothing here depends on the CPU's kernels or the thread count."""

from __future__ import annotations

import zlib

import contract
import ml_dtypes
import numpy as np
import pytest
from helpers import BF16, mismatches, weights

from quantcheck.numeric import NumericError, dequantize, quantize

pytestmark = pytest.mark.oracle

# Formats whose quantizer must be byte-identical, with shapes (padded ones included).
EXACT = [
    ("float8_e4m3fn", {}, [(64, 128), (77, 131), (300, 3072)]),
    ("float8_e5m2", {}, [(64, 128), (77, 131)]),
    ("int8_tensorwise", {}, [(64, 128), (77, 131), (300, 3072)]),
    ("int8_tensorwise", {"per_row": True}, [(64, 128), (77, 131), (257, 1000)]),
    ("nvfp4", {}, [(128, 256), (100, 200), (130, 80), (17, 48), (300, 3072)]),
    ("mxfp8", {}, [(128, 256), (100, 200), (130, 80), (64, 40), (300, 3072)]),
]
# Rotated formats: the any-order interval contract (contract.py).
ROTATED = [
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 16}, [(64, 128), (97, 48)]),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}, [(100, 192)]),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 256}, [(200, 768), (64, 3072)]),
    ("convrot_w4a4", {"convrot_groupsize": 16}, [(64, 128)]),
    ("convrot_w4a4", {"convrot_groupsize": 64}, [(99, 192)]),
    ("convrot_w4a4", {"convrot_groupsize": 256, "linear_dtype": "int8"}, [(200, 768)]),
    ("asym_w4a8_int8", {}, [(96, 256), (150, 768), (64, 3072)]),
    ("asym_w4a8_int8", {"codebook": False}, [(96, 256), (77, 512)]),
    ("asym_w4a8_int8", {"symmetric": False}, [(96, 256), (77, 512)]),
    ("asym_w4a8_int8", {"bits": 6}, [(96, 256), (77, 512)]),
    ("asym_w4a8_int8", {"bits": 6, "group_size": 32, "scale_dtype": "float32"}, [(96, 256)]),
    ("asym_w4a8_int8", {"group_size": 4, "convrot_groupsize": 16}, [(96, 256)]),
    ("asym_w4a8_int8", {"group_size": 8, "convrot_groupsize": 64}, [(40, 512)]),
    (
        "asym_w4a8_int8",
        {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"},
        [(96, 256)],
    ),
    ("w6a8_int8", {}, [(96, 256), (77, 512)]),
    (
        "w6a8_int8",
        {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"},
        [(96, 256)],
    ),
]
DTYPES = [BF16, np.float32, np.float16]


def _cases(table):
    for fmt, opts, shapes in table:
        for shape in shapes:
            for dt in DTYPES:
                if dt is np.float16 and shape[1] > 1000:
                    continue
                yield pytest.param(
                    fmt,
                    opts,
                    shape,
                    dt,
                    id=f"{fmt}-{opts}-{shape[0]}x{shape[1]}-{np.dtype(dt).name}",
                )


def _both_ways(ck, fmt, layer, theirs, shape):
    """Our dequantize of their bytes and their dequantize of our bytes, F32 output."""
    n, k = shape
    mine = layer.arrays()
    ref_theirs = ck.ck_dequantize(fmt, theirs, layer.marker, shape)
    ours_theirs = dequantize(fmt, theirs, layer.marker, shape)
    ref_mine = ck.ck_dequantize(fmt, mine, layer.marker, shape)
    ours_mine = dequantize(fmt, mine, layer.marker)
    assert ours_mine.shape == (n, k) and ours_mine.dtype == np.float32
    return (ours_theirs, ref_theirs), (ours_mine, ref_mine)


@pytest.mark.parametrize(("fmt", "opts", "shape", "dt"), list(_cases(EXACT)))
def test_exact_formats(ck, fmt, opts, shape, dt):
    w = weights(
        *shape,
        dt,
        seed=zlib.crc32(repr((fmt, shape)).encode()),
        kind="colscale" if shape[0] % 2 else "gauss",
    )
    theirs = ck.ck_quantize(w, fmt, **opts)
    try:
        layer = quantize(w, fmt, **opts)
    except NumericError as exc:
        # e5m2 from float16: 1/scale overflows unless amax > 57344/65504; ck then saturates
        # every code to ±57344 (NaN for zeros). We refuse instead.
        assert fmt == "float8_e5m2" and dt is np.float16 and "not finite" in str(exc)
        v = theirs["weight"].astype(np.float32)
        assert (np.isnan(v) | (np.abs(v) == 57344)).all()
        return
    assert set(layer.tensors) == set(theirs)
    for key, (name, arr) in layer.tensors.items():
        assert mismatches(arr, theirs[key]) == 0, key
        assert name in ("F8_E4M3", "F8_E5M2", "F32", "I8", "U8")
    for ours, ref in _both_ways(ck, fmt, layer, theirs, shape):
        assert mismatches(ours, ref) == 0


def check_quantize(fmt: str, opts: dict, w: np.ndarray, ours: dict, theirs: dict) -> dict:
    """The rotated-format quantize contract for one weight (see contract.py)."""
    assert set(ours) == set(theirs)
    if fmt == "int8_tensorwise":
        return contract.check_int8_convrot(w, int(opts["convrot_groupsize"]), ours, theirs)
    if fmt == "convrot_w4a4":
        return contract.check_w4a4(w, int(opts["convrot_groupsize"]), ours, theirs)
    if fmt == "w6a8_int8":
        opts = {**opts, "bits": 6}  # asym_w4a8_int8's 6-bit layout under its own name
    return contract.check_w4a8(w, opts, ours, theirs)


@pytest.mark.parametrize(("fmt", "opts", "shape", "dt"), list(_cases(ROTATED)))
def test_rotated_formats(ck, fmt, opts, shape, dt):
    w = weights(
        *shape,
        dt,
        seed=zlib.crc32(repr((fmt, opts, shape)).encode()),
        kind="outliers" if shape[0] % 2 else "gauss",
    )
    layer = quantize(w, fmt, **opts)
    theirs = ck.ck_quantize(w, fmt, **opts)
    check_quantize(fmt, opts, w, layer.arrays(), theirs)
    for (ours, ref), tensors in zip(
        _both_ways(ck, fmt, layer, theirs, shape), (theirs, layer.arrays()), strict=True
    ):
        contract.check_rotated_dequantize(fmt, tensors, layer.marker, shape, "float32", ours, ref)


def test_w4a8_int8_grid_exact(ck):
    import torch
    from comfy_kitchen.backends.eager.w4a8_int8 import _dequant_int4_grouped_to_int8

    from quantcheck.numeric.w4a8 import int8_grid

    for opts in (
        {},
        {"codebook": False},
        {"bits": 6},
        {"bits": 6, "scale_dtype": "float32"},
        {"symmetric": False},
    ):
        w = weights(64, 512, BF16, seed=7)
        theirs = ck.ck_quantize(w, "asym_w4a8_int8", **opts)
        cb = theirs.get("weight_codebook")
        ref = _dequant_int4_grouped_to_int8(
            ck.n2t(theirs["weight"]),
            ck.n2t(theirs["weight_s_rel"]),
            None if cb is None else torch.from_numpy(cb),
            16,
        )
        ours = int8_grid(theirs["weight"], theirs["weight_s_rel"], cb, 16)
        assert mismatches(ours, ref.numpy()) == 0, opts


def test_w4a8_fitted_codebook(ck):
    """g >= 128 fits a codebook: the contract's codebook checks hold for the fitted table."""
    w = weights(96, 512, BF16, seed=11)
    opts = {"group_size": 128, "convrot_groupsize": 64}
    layer = quantize(w, "asym_w4a8_int8", **opts)
    theirs = ck.ck_quantize(w, "asym_w4a8_int8", **opts)
    from quantcheck.numeric.w4a8 import FIXED_LUT

    assert not np.array_equal(theirs["weight_codebook"], FIXED_LUT)  # really the fitted path
    check_quantize("asym_w4a8_int8", opts, w, layer.arrays(), theirs)


def test_awq_dequantize(ck):
    rng = np.random.default_rng(3)
    n, k, g = 96, 512, 64
    q = rng.integers(-128, 128, (n, k // 2), dtype=np.int8)
    for dt in (BF16, np.float16):
        s = (rng.random((k // g, n)) * 0.01).astype(dt)
        z = (rng.standard_normal((k // g, n)) * 0.01).astype(dt)
        tensors = {"weight": q, "weight_scale": s, "weight_zeros": z}
        marker = {"format": "awq_w4a16", "group_size": g}
        for od in ("float32", "bfloat16"):
            ref = ck.ck_dequantize("awq_w4a16", tensors, marker, (n, k), od)
            ours = dequantize("awq_w4a16", tensors, marker, out_dtype=od)
            assert mismatches(ours, ref) == 0, (dt, od)


BF16_OUT = [
    ("float8_e4m3fn", {}, (64, 128)),
    ("float8_e5m2", {}, (64, 128)),
    ("int8_tensorwise", {"per_row": True}, (64, 128)),
    ("nvfp4", {}, (100, 200)),
    ("mxfp8", {}, (100, 200)),
    ("convrot_w4a4", {"convrot_groupsize": 64}, (64, 256)),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}, (64, 256)),
    ("asym_w4a8_int8", {}, (64, 512)),
]


@pytest.mark.parametrize(("fmt", "opts", "shape"), BF16_OUT, ids=lambda v: str(v))
@pytest.mark.parametrize("od", ["bfloat16", "float16"])
def test_low_precision_output(ck, fmt, opts, shape, od):
    """BF16/F16 dequantize follows ck's per-format rounding order: bit-exact without a
    rotation, inside the any-order interval rounded to the output dtype with one."""
    w = weights(*shape, BF16, seed=5)
    theirs = ck.ck_quantize(w, fmt, **opts)
    marker = quantize(w, fmt, **opts).marker
    ref = ck.ck_dequantize(fmt, theirs, marker, shape, od)
    ours = dequantize(fmt, theirs, marker, shape, out_dtype=od)
    assert ours.dtype == ref.dtype == np.dtype(BF16 if od == "bfloat16" else np.float16)
    rotated = fmt in ("asym_w4a8_int8", "convrot_w4a4") or opts.get("convrot")
    if not rotated:
        assert mismatches(ours, ref) == 0
    else:
        contract.check_rotated_dequantize(fmt, theirs, marker, shape, od, ours, ref)


def test_ml_dtypes_bf16_input_roundtrip_metrics(ck):
    """Round-trip error of our own codec is in the spec's measured range (sanity, not parity)."""
    from quantcheck.numeric.metrics import error_metrics

    w = weights(96, 512, BF16, seed=9) * ml_dtypes.bfloat16(2.5)  # 0.05·randn
    rel = {}
    for fmt in ("float8_e4m3fn", "nvfp4", "mxfp8", "convrot_w4a4"):
        layer = quantize(w, fmt)
        rel[fmt] = error_metrics(
            w.astype(np.float32), dequantize(fmt, layer.arrays(), layer.marker)
        ).rel_l2
    assert 0.02 < rel["float8_e4m3fn"] < 0.04
    assert 0.08 < rel["nvfp4"] < 0.11
    assert 0.02 < rel["mxfp8"] < 0.04
    assert 0.11 < rel["convrot_w4a4"] < 0.16
