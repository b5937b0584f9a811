"""The torch-order emulations against torch itself, and the Hadamard matrices."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import BF16, mismatches, weights

from quantcheck.numeric import hadamard, torch_order
from quantcheck.numeric.lowp import round_to, to_f32


@pytest.mark.parametrize("g", [4, 8, 16, 32, 48, 64, 128, 256])
def test_torch_sum_last(ck, g):
    import torch

    a = (np.random.default_rng(g).standard_normal((333, g)) *
         np.exp(3 * np.random.default_rng(g + 1).standard_normal((333, g)))).astype(np.float32)
    ref = torch.from_numpy(a).sum(-1).numpy()
    assert mismatches(torch_order.torch_sum_last(a), ref) == 0
    assert g < 16 or mismatches(a.sum(-1), ref) > 0  # the order really matters


def test_linspace_randint_quantile(ck):
    import torch

    for a, b, n in ((0, 1, 16), (0, 3071, 1365), (0, 99, 7), (2, 5, 1)):
        assert mismatches(torch_order.linspace_f32(a, b, n), torch.linspace(a, b, n).numpy()) == 0
    gen = torch.Generator().manual_seed(0)
    ref = torch.randint(0, 1000003, (5000,), generator=gen).numpy()
    assert np.array_equal(torch_order.torch_randint(1000003, 5000, 0), ref)
    x = np.sort(np.random.default_rng(0).standard_normal(30001).astype(np.float32))
    q = torch_order.linspace_f32(0, 1, 16)
    ref = torch.quantile(torch.from_numpy(x), torch.from_numpy(q)).numpy()
    assert mismatches(torch_order.torch_quantile(x, q), ref) == 0


def test_hadamard_properties():
    for g in (4, 16, 64, 256):
        h = hadamard.hadamard(g)
        assert np.array_equal(h, h.T)
        np.testing.assert_allclose(h @ h, np.eye(g), atol=1e-6)
        assert set(np.unique(np.abs(h))) == {np.float32(1 / np.sqrt(g))}
    assert hadamard.hadamard(4)[0].tolist() == [0.5, 0.5, 0.5, -0.5]
    assert hadamard.sgemm_is_sequential()


@pytest.mark.parametrize("g", [16, 64, 256])
def test_rotate_matches_torch(ck, g):
    import torch

    w = weights(64, 1024, BF16, seed=g, kind="colscale")
    h = torch.from_numpy(hadamard.hadamard(g))
    tw = ck.n2t(w).reshape(64, -1, g)
    ref_bf16 = ck.t2n(torch.matmul(tw, h.bfloat16().T).reshape(64, -1))
    ours = hadamard.rotate(to_f32(w), g, "bf16")
    assert mismatches(round_to(ours, "bf16"), ours) == 0  # rounded to bf16 values
    assert np.count_nonzero(ours != ref_bf16.astype(np.float32)) <= 2  # AMX CPUs: rare 1-ulp
    x = to_f32(w)
    ref_f32 = torch.matmul(torch.from_numpy(x).reshape(64, -1, g), h.T).reshape(64, -1).numpy()
    atol = 2e-6 * np.abs(x).max()
    np.testing.assert_allclose(hadamard.rotate(x, g, "f32"), ref_f32, rtol=0, atol=atol)
