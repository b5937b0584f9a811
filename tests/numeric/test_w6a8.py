"""w6a8_int8: asym_w4a8_int8's 6-bit layout under its own name (numeric/w6a8.py).

The bytes must be asym_w4a8_int8 bits=6's (same quantizer), the dequantize must be the same,
and the codec must refuse a packed row that is not 6-bit. comfy-kitchen parity (quantize and
dequantize, both ways) is in test_parity.py (ROTATED) and test_w6a8_int8_grid_exact here."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import BF16, mismatches, weights

from quantcheck.numeric import NumericError, dequantize, quantize


@pytest.mark.parametrize("opts", [{}, {"group_size": 32, "scale_dtype": "float32"}], ids=str)
def test_bytes_are_asym_w4a8_6bit(opts):
    w = weights(48, 256, BF16, seed=11)
    six = quantize(w, "w6a8_int8", **opts)
    asym = quantize(w, "asym_w4a8_int8", bits=6, codebook=False, **opts)
    assert set(six.tensors) == {"weight", "weight_s_rel", "weight_s_channel"}
    assert set(six.tensors) == set(asym.tensors)
    for key, (dtype, arr) in six.tensors.items():
        assert dtype == asym.tensors[key][0]
        assert np.array_equal(arr.view(np.uint8), asym.tensors[key][1].view(np.uint8)), key
    assert six.tensors["weight"][1].shape == (48, 3 * 256 // 4)
    assert six.marker == {**asym.marker, "format": "w6a8_int8"}
    a = dequantize(None, six.arrays(), six.marker)
    b = dequantize(None, asym.arrays(), asym.marker)
    assert mismatches(a, b) == 0


def test_round_trip_error_is_six_bit():
    w = weights(64, 512, np.float32, seed=3)
    layer = quantize(w, "w6a8_int8")
    back = dequantize(None, layer.arrays(), layer.marker)
    rel = np.linalg.norm(back - w) / np.linalg.norm(w)
    assert rel < 0.03  # spec §3.6: 6-bit rel-L2 2.1e-2; 4-bit uniform is 8.9e-2


def test_a_four_bit_row_is_refused():
    w = weights(32, 128, np.float32, seed=5)
    four = quantize(w, "asym_w4a8_int8", codebook=False, convrot_groupsize=64)
    marker = {**four.marker, "format": "w6a8_int8"}
    with pytest.raises(NumericError, match="packed row width 64 does not match K=128 at 6 bits"):
        dequantize(None, four.arrays(), marker)


@pytest.mark.parametrize(
    ("k", "opts", "why"), [(48, {}, "K % 32"), (256, {"group_size": 8}, "multiple of 16")], ids=str
)
def test_six_bit_layout_is_enforced(k, opts, why):
    with pytest.raises(NumericError, match=why):
        quantize(np.zeros((8, k), np.float32), "w6a8_int8", **{"convrot_groupsize": 16, **opts})


@pytest.mark.oracle
def test_w6a8_int8_grid_exact(ck):
    """The int8 grid of comfy-kitchen's own W6A8 bytes, decoded by ck and by us: bit-exact."""
    import torch  # noqa: F401
    from comfy_kitchen.backends.eager.w4a8_int8 import _dequant_int4_grouped_to_int8

    from quantcheck.numeric.w4a8 import int8_grid

    for opts in ({}, {"group_size": 32, "scale_dtype": "float32"}):
        g = int(opts.get("group_size", 16))
        w = weights(64, 512, BF16, seed=9)
        theirs = ck.ck_quantize(w, "w6a8_int8", **opts)
        assert theirs["weight"].shape == (64, 384) and "weight_codebook" not in theirs
        ref = _dequant_int4_grouped_to_int8(
            ck.n2t(theirs["weight"]), ck.n2t(theirs["weight_s_rel"]), None, g
        )
        ours = int8_grid(theirs["weight"], theirs["weight_s_rel"], None, g)
        assert mismatches(ours, ref.numpy()) == 0, opts
