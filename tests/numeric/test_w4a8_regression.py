"""W4A8 quantizer regression: SHA-256 digests of every output tensor at larger shapes (row
sampling of the codebook gate, 2^19-value kurtosis sample) than tests/numeric/golden.py.

The digests were re-recorded for issue 10, when the rotation became our own fixed-order fast
Walsh-Hadamard transform and the ALS / 6-bit error sums and the gate's kurtosis became
fixed-order pairwise sums (before, they imitated torch's and OpenBLAS's summation orders):
cases whose codes or scales moved by those last-bit differences changed digest; the uniform,
asymmetric, 6-bit (fp8 scales) and F16 asymmetric cases kept theirs. The input uses numpy's
Generator (PCG64, a stable stream); golden.py's inputs do not depend on numpy's RNG at all."""

from __future__ import annotations

import hashlib

import ml_dtypes
import numpy as np
import pytest

from quantcheck.numeric import w4a8

# (label, (n, k), input dtype, quantize options) -> digest over all outputs
CASES = [
    ("codebook_g16", (512, 1024), "bf16", {}),
    ("uniform", (512, 1024), "bf16", {"codebook": False}),
    ("asymmetric", (512, 1024), "bf16", {"symmetric": False}),
    ("w6", (512, 1024), "bf16", {"bits": 6}),
    (
        "w6_f32_scales_g32",
        (512, 1024),
        "bf16",
        {"bits": 6, "group_size": 32, "scale_dtype": "float32"},
    ),
    ("fitted_g128", (512, 1024), "bf16", {"group_size": 128}),
    ("fitted_g128_f32", (512, 1024), "f32", {"group_size": 128, "scale_dtype": "float32"}),
    (
        "codebook_f32",
        (512, 1024),
        "f32",
        {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"},
    ),
    (
        "asymmetric_f16_g8",
        (512, 1024),
        "f16",
        {"symmetric": False, "group_size": 8, "convrot_groupsize": 16},
    ),
    # more rows than the gate samples (2^22 // K) and more values than the kurtosis sample
    ("fitted_g128_sampled", (4200, 1024), "bf16", {"group_size": 256}),
    ("codebook_g64_sampled", (4200, 1024), "bf16", {"group_size": 64}),
]

DIGESTS = {
    "codebook_g16": "649f636c59d2e7c5be768f60fead1cbeea5032e7a7f8522ac95d5a04048e2268",
    "uniform": "a0ef7e2d79b1925a58728268e62970854230d5bc2378a79eefe0c5e76d9b8df4",
    "asymmetric": "4f68efc4fb2e99417515f138502d8ade81ef8ed79f28a4e67d80252cb528597a",
    "w6": "c31ba810c0d6f991668a1207c89b9af952c1de88848036f2f92afa5871a7f44c",
    "w6_f32_scales_g32": "c1f0d3786da00f10206047f3aeccd187c70ed825c75c5b00985a1c3ed4ce3a1f",
    "fitted_g128": "a7601157fcb01851ecffa00c4fa8129e00037359c926dd362038335ac54b8df5",
    "fitted_g128_f32": "d5bfb0508228bd007f72eef9b44ec8579c865c499a51c692da530d94b82b423c",
    "codebook_f32": "a7b0b6d934814815bc42939d83b2f2ae9f8702b680bc1630ea721c9958e9966c",
    "asymmetric_f16_g8": "5022a0fffeb25d9581c9d9d715baf669e5d529ec285cd0a420269e486b9f1bf9",
    "fitted_g128_sampled": "637898693ac4534a27a57108247cd2de490531d51ec689c05ce7df90563f7d4a",
    "codebook_g64_sampled": "bd73430170c0b70d770a8b3e89d03f2a4a05a3f7517abc15f9ccd55e924a1bc4",
}


def _input(n: int, k: int, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(20240611)
    w = rng.standard_normal((n, k), np.float32) * np.float32(0.02)
    w[3] = 0.0  # an all-zero row and a few all-zero groups
    w[7, :64] = 0.0
    dt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[dtype]
    return w.astype(dt)


def digest(shape: tuple[int, int], dtype: str, opts: dict) -> str:
    out = w4a8.quantize(_input(*shape, dtype), **opts)
    h = hashlib.sha256()
    for key in sorted(out):
        a = np.ascontiguousarray(out[key])
        h.update(f"{key}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.view(np.uint8).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize(("label", "shape", "dtype", "opts"), CASES, ids=[c[0] for c in CASES])
def test_w4a8_outputs_unchanged(label, shape, dtype, opts):
    assert digest(shape, dtype, opts) == DIGESTS[label]
