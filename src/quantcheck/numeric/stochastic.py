"""ComfyUI's stochastic-rounding re-quantizers (what a LoRA patch writes back), in numpy.

ComfyUI replaces comfy-kitchen's FP8, NVFP4 and MXFP8 quantizers when `stochastic_rounding`
is a seed (comfy/quant_ops.py @0271a469, comfy/float.py @783545f6, comfy-kitchen 0.2.40 eager
`stochastic_rounding_fp8`). The random numbers are torch's CPU generator: `manual_seed(seed)`
is MT19937 with the reference integer seeding, `randint(0, 256, uint8)` takes each 32-bit draw
modulo 256 and `rand(float32)` its low 24 bits times 2^-24, element by element in row-major
order; numpy's MT19937 with the same (legacy) seeding gives the same stream, so the codes
below are the ones ComfyUI writes wherever the per-element arithmetic agrees (it is the same
IEEE operation sequence, in float16 for FP8 as ComfyUI does; `log2` is the one transcendental,
rounded as torch rounds it). Each function returns the dequantized float32 weight (and the
codes for the differential tests).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

F16 = np.float16
F32 = np.float32
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
#: (exponent bits, mantissa bits, bias, largest finite, dtype) per FP8 format
FP8_FORMATS = {
    "float8_e4m3fn": (4, 3, 7, 448.0, E4M3),
    "float8_e5m2": (5, 2, 15, 57344.0, E5M2),
}


_LAST_STREAM: list[tuple[int, int, np.ndarray]] = []


def torch_stream(seed: int, n: int) -> np.ndarray:
    """The first `n` 32-bit draws of `torch.Generator().manual_seed(seed)` (CPU). The last
    stream is kept (a patched layer and its unpatched twin are re-quantized with one seed);
    callers must not change it."""
    if _LAST_STREAM and _LAST_STREAM[0][:2] == (seed, n):
        return _LAST_STREAM[0][2]
    bg = np.random.MT19937()
    bg._legacy_seeding(int(seed) & 0xFFFFFFFF)
    out = bg.random_raw(n).astype(np.uint32)
    out.flags.writeable = False
    _LAST_STREAM[:] = [(seed, n, out)]
    return out


def forget_stream() -> None:
    """Drop the kept stream (`torch_stream`)."""
    _LAST_STREAM.clear()


def string_to_seed(text: str) -> int:
    """comfy.utils.string_to_seed: a CRC-32 over the characters' code points."""
    crc = 0xFFFFFFFF
    for ch in text:
        crc ^= ord(ch)
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _log2_as_torch(x: np.ndarray, dtype: type) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log2(x.astype(np.float64)).astype(dtype)


def _sr_fp8_reference(h: np.ndarray, fmt: str) -> tuple[np.ndarray, ...]:
    """The per-value part of comfy-kitchen's eager `stochastic_rounding_fp8` on float16 `h`
    (every op in float16, as torch runs it): (sign, normal, 2^(e - bias), mantissa x 2^M)."""
    ebits, mbits, bias, _, _ = FP8_FORMATS[fmt]
    abs_x = np.abs(h)
    sign = np.where(abs_x == 0, F16(0), np.sign(h)).astype(F16)
    exponent = np.clip(np.floor(_log2_as_torch(abs_x, F16)) + F16(bias), 0, 2**ebits - 1)
    exponent = exponent.astype(F16)
    normal = exponent != 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        p = np.power(F16(2.0), (exponent - F16(bias)).astype(F16)).astype(F16)
        m_normal = ((abs_x / p).astype(F16) - F16(1.0)).astype(F16) * F16(2**mbits)
        m_sub = abs_x / F16(2.0 ** (-bias + 1 - mbits))
        ms = np.where(normal, m_normal, m_sub).astype(F16)
    return sign, normal, p, ms


_FP8_TABLES: dict[str, np.ndarray] = {}


def _fp8_table(fmt: str) -> np.ndarray:
    """codes[h bits, rng byte]: the FP8 code comfy-kitchen's stochastic rounding gives every
    float16 value with every random byte (65536 x 256, built once per format). The float16
    sum ms + rng/256 is formed in float32 (exact: both have 11-bit significands of nearby
    scale) and rounded to float16 as torch does; the rest is exact in float32."""
    table = _FP8_TABLES.get(fmt)
    if table is not None:
        return table
    _, mbits, bias, top, dtype = FP8_FORMATS[fmt]
    h = np.arange(65536, dtype=np.uint16).view(F16)
    sign, normal, p, ms = _sr_fp8_reference(h, fmt)
    r = (np.arange(256, dtype=np.float32) * F32(1.0 / 256.0))[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        summed = (ms.astype(F32)[:, None] + r).astype(F16).astype(F32)
        m = np.floor(summed) / F32(2**mbits)
        val = np.where(
            normal[:, None], p.astype(F32)[:, None] * (F32(1.0) + m), F32(2.0 ** (-bias + 1)) * m
        )
        out = np.clip(sign.astype(F32)[:, None] * val, -top, top)
    table = _FP8_TABLES[fmt] = out.astype(dtype).view(np.uint8)
    return table


def sr_fp8_codes(x: np.ndarray, fmt: str, rng: np.ndarray) -> np.ndarray:
    """comfy-kitchen's eager `stochastic_rounding_fp8(x, rng)` (float16 arithmetic, uint8
    random bytes): the FP8 codes, by table lookup per (float16 value, byte)."""
    table = _fp8_table(fmt).reshape(-1)
    flat = x.reshape(-1)
    out = np.empty(flat.size, np.uint8)
    r = rng.reshape(-1)
    step = 1 << 22
    for i in range(0, flat.size, step):
        idx = flat[i : i + step].astype(F16).view(np.uint16).astype(np.uint32) << 8
        idx |= r[i : i + step]
        out[i : i + step] = table[idx]
    return out.view(FP8_FORMATS[fmt][4]).reshape(x.shape)


def fp8_requant(w: np.ndarray, fmt: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.float32]:
    """TensorCoreFP8Layout.quantize(w, scale="recalculate", stochastic_rounding=seed) on a
    float32 weight, then its dequantize: (float32 weight, codes, scale)."""
    top = FP8_FORMATS[fmt][3]
    scale = F32(np.max(np.abs(w))) / F32(top)
    scaled = w * (F32(1.0) / scale)
    rng = (torch_stream(seed, scaled.size) & 0xFF).astype(np.uint8).reshape(scaled.shape)
    codes = sr_fp8_codes(scaled, fmt, rng)
    return codes.astype(F32) * scale, codes, scale


def _pad(w: np.ndarray, m: int) -> np.ndarray:
    n, k = w.shape
    pn, pk = -(-n // m) * m, -(-k // m) * m
    if (pn, pk) == (n, k):
        return w
    return np.pad(w, ((0, pn - n), (0, pk - k)))


_THRESHOLDS: dict[float, np.ndarray] = {}


def _floor_log2_thresholds(c: float) -> np.ndarray:
    """T[n-1] (n = 1, 2, 3): the smallest float32 x >= 0 with floor(f32(log2f(x) + c)) >= n,
    found around 2^(n - c) by stepping float32 neighbours with the same rounded log2 as
    `_log2_as_torch` (so clip(floor(log2(x) + c), 0, 3) == (x >= T).sum())."""
    hit = _THRESHOLDS.get(c)
    if hit is not None:
        return hit

    def at_least(x: np.float32, n: int) -> bool:
        lg = _log2_as_torch(np.asarray([x], F32), F32)
        return bool(np.floor((lg + F32(c)).astype(F32))[0] >= n)

    out = []
    for n in (1, 2, 3):
        x = F32(2.0 ** (n - c))
        while at_least(x, n):
            x = np.nextafter(x, F32(0))
        while not at_least(x, n):
            x = np.nextafter(x, F32(np.inf))
        out.append(x)
    hit = _THRESHOLDS[c] = np.asarray(out, F32)
    return hit


def _exponent(x: np.ndarray, c: float) -> np.ndarray:
    """clip(floor(log2f(x) + c), 0, 3) for x >= 0 (float32), by three comparisons."""
    t = _floor_log2_thresholds(c)
    return (x >= t[0]).astype(np.uint8) + (x >= t[1]) + (x >= t[2])


_POW2 = np.asarray([2.0**-2, 2.0**-1, 1.0, 2.0], F32)  # 2^(e - 2), e = 0..3
_INV_POW2 = np.asarray([2.0, 1.0, 0.5, 0.25], F32)  # 1 / 2^(e - 1)


def _sr_fp4(x: np.ndarray, rand: np.ndarray) -> np.ndarray:
    """comfy/float.py stochastic_float_to_fp4_e2m1: unpacked 4-bit codes (uint8)."""
    sign = np.signbit(x).astype(np.uint8)
    exp = _exponent(np.abs(x), 1.0)
    x = x + ((rand - F32(0.5)) * _POW2[exp]) * F32(1.25)
    x = np.abs(x)
    exp = _exponent(x, 1.1925)
    mant = np.where(exp > 0, (x * _INV_POW2[exp] - F32(1.0)) * F32(2.0), x * F32(2.0))
    mant = np.rint(mant).astype(np.int64).astype(np.uint8)
    return ((sign << 3) | (exp << 1) | mant).astype(np.uint8)


E2M1_VALUES = np.array(
    [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=F32
)


def nvfp4_requant(w: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TensorCoreNVFP4Layout.quantize(w, "recalculate", stochastic_rounding=seed), then its
    dequantize: (float32 weight [N, K], unpacked codes [N16, K16], block scales [N16, K16/16]
    as float8_e4m3fn, not swizzled)."""
    n, k = w.shape
    s2 = F32(np.max(np.abs(w))) / F32(448.0 * 6.0)
    x = _pad(w.astype(F32, copy=False), 16)
    rows, cols = x.shape
    blocks = x.reshape(rows, cols // 16, 16)
    amax = np.max(np.abs(blocks), axis=-1)
    bs = np.minimum((amax / F32(6.0)) / s2, F32(448.0)).astype(E4M3)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = blocks / (s2 * bs.astype(F32))[:, :, None]
    scaled = np.nan_to_num(scaled.reshape(rows, cols), nan=0.0)
    rand = (torch_stream(seed, scaled.size) & 0xFFFFFF).astype(F32) * F32(2.0**-24)
    codes = _sr_fp4(scaled, rand.reshape(scaled.shape))
    vals = E2M1_VALUES[codes].reshape(rows, cols // 16, 16)
    out = (vals * (s2 * bs.astype(F32))[:, :, None]).reshape(rows, cols)
    return out[:n, :k], codes, bs


def mxfp8_requant(w: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TensorCoreMXFP8Layout.quantize(w, stochastic_rounding=seed), then its dequantize:
    (float32 weight [N, K], FP8 codes [N32, K32], E8M0 exponents [N32, K32/32])."""
    n, k = w.shape
    x = _pad(w.astype(F32, copy=False), 32)
    rows, cols = x.shape
    blocks = x.reshape(rows, cols // 32, 32)
    max_abs = np.max(np.abs(blocks), axis=-1)
    need = np.maximum(max_abs / F32(448.0), F32(2.0**-127))
    exp = np.clip(np.ceil(_log2_as_torch(need, F32)).astype(np.int32) + 127, 0, 254)
    scale = (exp.astype(np.int32) << 23).view(F32)
    zero = max_abs == 0
    scale = np.where(zero, F32(1.0), scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = (blocks / scale[:, :, None]).reshape(rows, cols)
    rng = (torch_stream(seed, scaled.size) & 0xFF).astype(np.uint8).reshape(scaled.shape)
    codes = sr_fp8_codes(scaled, "float8_e4m3fn", rng)
    e8 = np.where(zero, 0, exp).astype(np.uint8)
    deq_scale = np.where(e8 == 0, F32(2.0**-127), (e8.astype(np.int32) << 23).view(F32))
    out = (codes.astype(F32).reshape(rows, cols // 32, 32) * deq_scale[:, :, None]).reshape(
        rows, cols
    )
    return out[:n, :k], codes, e8


def uniform(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """torch.rand(shape, generator=manual_seed(seed)) on the CPU (float32)."""
    n = 1
    for d in shape:
        n *= d
    return ((torch_stream(seed, n) & 0xFFFFFF).astype(F32) * F32(2.0**-24)).reshape(shape)


def kitchen_requant(w: np.ndarray, fmt: str, seed: int, options: dict[str, Any]) -> np.ndarray:
    """comfy-kitchen 0.2.40's quantize(w, **requantize_kwargs, stochastic_rounding=seed) for
    INT8 (tensorwise, per-row, ConvRot), ConvRot W4A4 and W4A8/W6A8 (the layer's own
    codebook, no scale search), then its dequantize (float32): quantcheck's codecs with its
    random stream, U[0, 1) per element of the (rotated) weight in row-major order."""
    from . import int8, w4a4, w4a8

    noise = uniform(seed, w.shape)
    g = int(options.get("convrot_groupsize", 256))
    if fmt == "int8_tensorwise":
        rot = bool(options.get("convrot"))
        q, s = int8.quantize(w, bool(options.get("per_row")) or rot, rot, g, noise=noise)
        return int8.dequantize(q, s, rot, g)
    if fmt == "convrot_w4a4":
        q4, s4 = w4a4.quantize(w, g, noise=noise)
        return w4a4.dequantize(q4, s4, g)
    gs = int(options.get("group_size", 16))
    six = fmt == "w6a8_int8" or int(options.get("bits", 4)) == 6
    out = w4a8.quantize(
        w,
        gs,
        g,
        codebook=bool(options.get("codebook", True)) and not six,
        symmetric=bool(options.get("symmetric", True)),
        bits=6 if six else 4,
        scale_dtype=str(options.get("scale_dtype", "float8_e4m3fn")),
        codebook_table=options.get("codebook_table"),
        noise=noise,
        scale_search=False,
    )
    return w4a8.dequantize(
        out["weight"],
        out["weight_s_rel"],
        out["weight_s_channel"],
        out.get("weight_codebook"),
        out.get("weight_correction"),
        gs,
        g,
    )
