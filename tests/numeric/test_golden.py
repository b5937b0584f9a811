"""Numeric contract, part 1: quantcheck's own output is the same on every machine.

The committed SHA-256 digests (golden_digests.json, regenerate with
``PYTHONPATH=src python tests/numeric/golden.py --write``) cover every format and variant, F32
and BF16 inputs, padded NVFP4/MXFP8, every ConvRot group size and every W4A8 variant. They
must hold at 1 and 2 threads and with row chunks far smaller than the default (chunking and
thread count never change a result). Nothing here needs torch."""

from __future__ import annotations

import json

import numpy as np
import pytest
from golden import CASES, DIGEST_FILE, DTYPES, case_input, digests, splitmix64, weights

from quantcheck.numeric import lowp, w4a8

GOLDEN = json.loads(DIGEST_FILE.read_text())
IDS = [f"{c[0]}-{dt}" for c in CASES for dt in DTYPES]


@pytest.fixture(
    params=[("1", False), ("2", False), ("1", True), ("2", True)],
    ids=["threads1", "threads2", "threads1-small-chunks", "threads2-small-chunks"],
)
def setting(request, monkeypatch):
    threads, small = request.param
    monkeypatch.setenv("QUANTCHECK_THREADS", threads)
    if small:  # a few rows per chunk: many chunks, spread over the pool
        monkeypatch.setattr(lowp, "CHUNK_ELEMS", 2048)
        monkeypatch.setattr(w4a8, "_HEAVY_CHUNK", 2048)
        monkeypatch.setattr(w4a8, "_LIGHT_CHUNK", 2048)
    return request.param


def test_digest_file_covers_every_case():
    assert sorted(GOLDEN) == sorted(IDS)


@pytest.mark.parametrize("case", IDS)
def test_golden_digests(case, setting):
    label, dtype = case.rsplit("-", 1)
    assert digests(label, dtype) == GOLDEN[case]


def test_inputs_are_fixed():
    """The generator itself: known splitmix64 outputs (seed 0) and exact float mapping."""
    assert splitmix64(0, 3).tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    w = weights(3, 5, "f32", 7, "tails")
    assert w.dtype == np.float32 and np.array_equal(w, weights(3, 5, "f32", 7, "tails"))
    assert np.array_equal(
        weights(3, 5, "bf16", 7).astype(np.float32), lowp.round_to(weights(3, 5, "f32", 7), "bf16")
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_fitted_codebook_case_really_fits(dtype):
    from quantcheck.numeric import quantize

    fmt, opts, w = case_input("w4a8_fitted_g128", dtype)
    layer = quantize(w, fmt, **opts)
    assert not np.array_equal(layer.arrays()["weight_codebook"], w4a8.FIXED_LUT)
