"""Golden digests of quantcheck's own quantize / dequantize output (numeric contract, part 1).

Inputs come from splitmix64 in uint64 arithmetic mapped to floats by exact operations, so
they are the same on every machine and numpy version. Regenerate the committed digests
(only when a deliberate change of our numerics is intended; say why in the commit):

    PYTHONPATH=src python tests/numeric/golden.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

from quantcheck.numeric import dequantize, quantize

DIGEST_FILE = Path(__file__).with_name("golden_digests.json")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def splitmix64(seed: int, count: int) -> np.ndarray:
    """``count`` splitmix64 outputs (uint64) of the stream starting at ``seed``."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(1, count + 1, dtype=np.uint64) * _GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def weights(n: int, k: int, dtype: str, seed: int, kind: str = "bell") -> np.ndarray:
    """Deterministic test weights [n, k]: every step is exact in F32.

    ``bell``: sum of four 22-bit uniforms in [-1, 1) (Irwin-Hall, exact) times 2^-6;
    ``tails``: the same with a per-value power-of-two scale 2^-(0..7) and one value in 512
    multiplied by 32 (heavy-tailed). BF16/F16 inputs are the F32 values rounded (RNE)."""
    z = splitmix64(seed, n * k * 2).reshape(2, n * k)
    acc = np.zeros(n * k, np.float32)
    for lane in range(4):
        u = (z[0] >> np.uint64(42 - 11 * (lane % 2))) & np.uint64((1 << 22) - 1)
        if lane >= 2:
            u = (z[1] >> np.uint64(40 - 18 * (lane % 2))) & np.uint64((1 << 22) - 1)
        acc += (u.astype(np.float32) - np.float32(1 << 21)) * np.float32(2.0**-21)
    acc *= np.float32(2.0**-6)
    if kind == "tails":
        shift = (z[1] & np.uint64(7)).astype(np.int32)
        acc = np.ldexp(acc, -shift).astype(np.float32)
        acc[((z[1] >> np.uint64(3)) & np.uint64(511)) == 0] *= np.float32(32)
    w = acc.reshape(n, k)
    return w.astype({"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype])


W8 = "asym_w4a8_int8"
# (label, format, options, (n, k), input kind)
CASES: list[tuple[str, str, dict, tuple[int, int], str]] = [
    ("e4m3", "float8_e4m3fn", {}, (77, 131), "bell"),
    ("e5m2", "float8_e5m2", {}, (64, 96), "tails"),
    ("int8_scalar", "int8_tensorwise", {}, (77, 131), "bell"),
    ("int8_row", "int8_tensorwise", {"per_row": True}, (77, 131), "tails"),
    (
        "int8_convrot16",
        "int8_tensorwise",
        {"convrot": True, "convrot_groupsize": 16},
        (45, 256),
        "tails",
    ),
    (
        "int8_convrot64",
        "int8_tensorwise",
        {"convrot": True, "convrot_groupsize": 64},
        (45, 256),
        "bell",
    ),
    (
        "int8_convrot256",
        "int8_tensorwise",
        {"convrot": True, "convrot_groupsize": 256},
        (33, 512),
        "tails",
    ),
    ("nvfp4", "nvfp4", {}, (64, 128), "bell"),
    ("nvfp4_padded", "nvfp4", {}, (77, 131), "tails"),
    ("mxfp8", "mxfp8", {}, (64, 128), "bell"),
    ("mxfp8_padded", "mxfp8", {}, (77, 131), "tails"),
    ("w4a4_16", "convrot_w4a4", {"convrot_groupsize": 16}, (45, 256), "bell"),
    ("w4a4_64", "convrot_w4a4", {"convrot_groupsize": 64}, (45, 256), "tails"),
    (
        "w4a4_256",
        "convrot_w4a4",
        {"convrot_groupsize": 256, "linear_dtype": "int8"},
        (33, 512),
        "tails",
    ),
    ("w4a8_codebook", W8, {}, (40, 512), "bell"),
    ("w4a8_fitted_g128", W8, {"group_size": 128}, (40, 512), "bell"),
    ("w4a8_uniform", W8, {"codebook": False}, (40, 512), "tails"),
    ("w4a8_asym", W8, {"symmetric": False}, (40, 512), "tails"),
    (
        "w4a8_asym_g8_cg16",
        W8,
        {"symmetric": False, "group_size": 8, "convrot_groupsize": 16},
        (40, 256),
        "bell",
    ),
    ("w4a8_6bit", W8, {"bits": 6}, (40, 512), "tails"),
    (
        "w4a8_6bit_g32_f32",
        W8,
        {"bits": 6, "group_size": 32, "scale_dtype": "float32"},
        (40, 512),
        "bell",
    ),
    ("w4a8_g4_cg16", W8, {"group_size": 4, "convrot_groupsize": 16}, (40, 256), "tails"),
    ("w4a8_g8_cg64", W8, {"group_size": 8, "convrot_groupsize": 64}, (40, 256), "bell"),
    (
        "w4a8_g32_cg64_f32",
        W8,
        {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"},
        (40, 256),
        "tails",
    ),
    ("w6a8", "w6a8_int8", {}, (40, 512), "tails"),
    (
        "w6a8_g32_cg64_f32",
        "w6a8_int8",
        {"group_size": 32, "convrot_groupsize": 64, "scale_dtype": "float32"},
        (40, 256),
        "bell",
    ),
]
DTYPES = ("f32", "bf16")


def _update(h, name: str, a: np.ndarray) -> None:
    a = np.ascontiguousarray(a)
    h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
    h.update(a.view(np.uint8).tobytes())


def case_input(label: str, dtype: str) -> tuple[str, dict, np.ndarray]:
    """(format, options, weight) of one golden case."""
    _, fmt, opts, (n, k), kind = next(c for c in CASES if c[0] == label)
    seed = int.from_bytes(hashlib.sha256(label.encode()).digest()[:4], "little")
    return fmt, opts, weights(n, k, dtype, seed, kind)


def digests(label: str, dtype: str) -> dict[str, str]:
    """SHA-256 of the quantize output (every tensor + marker) and of its F32 dequantize."""
    fmt, opts, w = case_input(label, dtype)
    n, k = w.shape
    layer = quantize(w, fmt, **opts)
    hq = hashlib.sha256(json.dumps(layer.marker, sort_keys=True).encode())
    for key in sorted(layer.tensors):
        name, arr = layer.tensors[key]
        _update(hq, f"{key}:{name}", arr)
    hd = hashlib.sha256()
    _update(hd, "dequantize", dequantize(fmt, layer.arrays(), layer.marker, (n, k)))
    return {"quantize": hq.hexdigest(), "dequantize": hd.hexdigest()}


def all_digests() -> dict[str, dict[str, str]]:
    return {f"{c[0]}-{dt}": digests(c[0], dt) for c in CASES for dt in DTYPES}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: PYTHONPATH=src python tests/numeric/golden.py --write")
    DIGEST_FILE.write_text(json.dumps(all_digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DIGEST_FILE}")
