"""W4A8 quantizer regression: outputs must stay bit-identical to the implementation before the
memory rework (SHA-256 digests of every output tensor, recorded from that implementation)."""

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
    ("w6_f32_scales_g32", (512, 1024), "bf16",
     {"bits": 6, "group_size": 32, "scale_dtype": "float32"}),
    ("fitted_g128", (512, 1024), "bf16", {"group_size": 128}),
    ("fitted_g128_f32", (512, 1024), "f32",
     {"group_size": 128, "scale_dtype": "float32"}),
    ("codebook_f32", (512, 1024), "f32",
     {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"}),
    ("asymmetric_f16_g8", (512, 1024), "f16",
     {"symmetric": False, "group_size": 8, "convrot_groupsize": 16}),
    # more rows than the gate samples (2^22 // K) and more values than the kurtosis sample
    ("fitted_g128_sampled", (4200, 1024), "bf16", {"group_size": 256}),
    ("codebook_g64_sampled", (4200, 1024), "bf16", {"group_size": 64}),
]

DIGESTS = {
    "codebook_g16": "72611037390d721f318c13a8394b838051b9d2aaa48aef88db1fab89af4bd5dd",
    "uniform": "a0ef7e2d79b1925a58728268e62970854230d5bc2378a79eefe0c5e76d9b8df4",
    "asymmetric": "4f68efc4fb2e99417515f138502d8ade81ef8ed79f28a4e67d80252cb528597a",
    "w6": "c31ba810c0d6f991668a1207c89b9af952c1de88848036f2f92afa5871a7f44c",
    "w6_f32_scales_g32": "9bd9bbd47d028773c452c6617e30a24738c7b19eae04a946801df44eab5adefa",
    "fitted_g128": "12ff4c483409f7db13b9a23a88fe030359b09e1ea53796e354b079c466402ced",
    "fitted_g128_f32": "f8bb5734e7b259a98899f726d968b8069f105f5583eef53a5aab90644328539a",
    "codebook_f32": "7b947541488cf7294775ad2f543d67e717dfd89bd8b419270f2f2ed4cf0af657",
    "asymmetric_f16_g8": "5022a0fffeb25d9581c9d9d715baf669e5d529ec285cd0a420269e486b9f1bf9",
    "fitted_g128_sampled": "5e5f5dad58545b39599c558440ddaae32769063d09957fb532ddd216357aba6b",
    "codebook_g64_sampled": "ced0944d1d00677bf6163d08233b596bd12670fd43b8b4f272d280ed48e57315",
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
