"""Differential test of SD.Next d11a619's LoRA re-quantization (`make diff-consumers`): SDNQ's
`quantize_weight` (+ `pack_float` / `unpack_float` for FP4, its Hadamard rotation for ConvRot
INT8) is `numeric/lora_requant.sdnq_requant`, and the figures quantcheck reports for `sdnext`
are those of SDNQ's re-quantization (sdnq.py fetches the source).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.numeric.lora_patch import figures
from quantcheck.numeric.lora_requant import sdnq_requant

from ...lora.runtime_figures import analysed, lora_delta, same_figures, wan_pair
from .sdnq import load_sdnq, tree

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)


@pytest.fixture(scope="module")
def sdnq() -> Any:
    pytest.importorskip("torch")
    root = tree()
    if root is None:
        pytest.fail("no SD.Next source: set QUANTCHECK_SDNEXT_SRC or let git fetch d11a619")
    yield load_sdnq(root)
    for name in [n for n in sys.modules if n == "modules" or n.startswith("modules.")]:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("fmt", "options"),
    [
        ("int8_tensorwise", {}),
        ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}),
        ("float8_e4m3fn", {}),
        ("nvfp4", {}),
    ],
)
def test_sdnq_requant_is_sdnexts(sdnq, fmt: str, options: dict[str, Any]) -> None:
    """SDNQ's quantize_weight (stochastic rounding off, as SD.Next's LoRA merge calls it) and
    sdnq_requant give the same weight: bit for bit, within float rounding where SD.Next
    rotates (ConvRot)."""
    import torch

    rng = np.random.default_rng(7)
    w = (rng.standard_normal((64, 256)) * 0.02).astype(np.float32)
    w[3, 5] = 0.3  # a row with an outlier: its scale differs from the others
    t = torch.from_numpy(w.copy())
    qu, pf = sdnq.quant_utils, sdnq.packed_float
    if fmt == "nvfp4":
        q, s, _ = qu.quantize_weight(t.unflatten(-1, (16, 16)), -1, "float4_e2m1fn")
        q = pf.unpack_float(pf.pack_float(q, "float4_e2m1fn"), "float4_e2m1fn", q.shape)
        theirs = (q.float() * s).reshape(64, 256).numpy()
    elif options.get("convrot"):
        g = options["convrot_groupsize"]
        rot, _, _ = qu.apply_hadamard(t, group_size=g, layer_class_name="Linear")
        q, s, _ = qu.quantize_weight(rot, -1, "int8")
        h = qu.get_hadamard(g, dtype=torch.float32, device="cpu")
        theirs = qu.rotate_hadamard(q.float() * s, group_size=g, hadamard=h).numpy()
    else:
        sd_fmt = {"int8_tensorwise": "int8", "float8_e4m3fn": "float8_e4m3fn"}[fmt]
        q, s, _ = qu.quantize_weight(t, -1, sd_fmt)
        theirs = (q.float() * s).numpy()
    mine = sdnq_requant(w, fmt, options)
    if options.get("convrot"):
        assert np.linalg.norm(mine - theirs) / np.linalg.norm(theirs) <= 1e-6
    else:
        assert np.array_equal(mine, theirs), np.abs(mine - theirs).max()


def test_sdnq_fp4_rounding_on_random_values(sdnq) -> None:
    import torch

    from quantcheck.numeric.lora_requant import _e2m1

    y = torch.from_numpy(np.random.default_rng(3).uniform(-6, 6, 100_000).astype(np.float32))
    pf = sdnq.packed_float
    theirs = pf.unpack_float(pf.pack_float(y, "float4_e2m1fn"), "float4_e2m1fn", y.shape)
    assert np.array_equal(_e2m1(y.numpy()), theirs.numpy())


@pytest.mark.parametrize(("fmt", "size"), [("nvfp4", 0.01), ("int8_tensorwise", 0.003)])
def test_sdnext_figures_are_sdnqs(sdnq, tmp_path: Path, fmt: str, size: float) -> None:
    """The figures quantcheck reports for `sdnext` are those of SDNQ's own re-quantization of
    W + s·ΔW (W: the layer as SD.Next adopts it, bit-exact from the file)."""
    import torch

    b, lo = wan_pair(tmp_path, fmt, size=size)
    a = analysed(b, lo, "sdnext")
    qu, pf = sdnq.quant_utils, sdnq.packed_float

    def requant(x: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(x.copy())
        if fmt == "nvfp4":
            groups = t.unflatten(-1, (x.shape[1] // 16, 16))
            q, s, _ = qu.quantize_weight(groups, -1, "float4_e2m1fn")
            q = pf.unpack_float(pf.pack_float(q, "float4_e2m1fn"), "float4_e2m1fn", q.shape)
            return (q.float() * s).reshape(x.shape).numpy()
        q, s, _ = qu.quantize_weight(t, -1, "int8")
        return (q.float() * s).numpy()

    with load_checkpoint([str(b)]) as base:
        from safetensors.torch import load_file

        lora = load_file(str(lo))
        for r in a.layers:
            w = base.layer(r.layer).dequantize(shape=r.shape)
            d = lora_delta(lora, r.layer, 1.0).astype(np.float32)
            fig = figures(w, d, requant(w + d), requant(w))
            same_figures(r.runtimes["sdnext"], fig, f"sdnext {fmt} {r.layer}")
