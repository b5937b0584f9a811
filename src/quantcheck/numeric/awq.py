"""awq_w4a16 (dequantize only): unsigned nibbles low first, ``W = (u - 8) * s + z``.

``weight_scale`` and ``weight_zeros`` are [K/G, N] (transposed). Each op is rounded to the
output dtype, as comfy-kitchen computes it in ``orig_dtype``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quantcheck.formats.codecs import register_codec

from .errors import NumericError
from .lowp import round_to, row_step, to_f32
from .nibbles import unpack_lo_first
from .parallel import for_each


def dequantize(
    packed: np.ndarray,
    scale: np.ndarray,
    zeros: np.ndarray,
    group_size: int = 64,
    out_dtype: str = "float32",
) -> np.ndarray:
    """[N, K] weight from I8 [N, K/2], scale/zeros [K/G, N]."""
    n = packed.shape[0]
    k = packed.shape[1] * 2
    g = int(group_size)
    if g <= 0 or k % g:
        raise NumericError(f"awq_w4a16: K={k} is not divisible by group_size {g}")
    if scale.shape != (k // g, n) or zeros.shape != (k // g, n):
        raise NumericError(
            f"awq_w4a16: weight_scale {scale.shape} / weight_zeros {zeros.shape} must be "
            f"[{k // g}, {n}]"
        )
    out_kind = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[out_dtype]
    # torch type promotion: the codes are cast to the output dtype; mixing it with scales of
    # another dtype computes in F32 and rounds once at the end.
    same = {"bfloat16": "bf16", "float16": "f16"}.get(str(scale.dtype)) == out_kind
    kind = out_kind if same and zeros.dtype == scale.dtype else "f32"
    s = np.ascontiguousarray(to_f32(scale).T)[:, :, None]
    z = np.ascontiguousarray(to_f32(zeros).T)[:, :, None]
    out = np.empty((n, k), np.float32)
    p8 = packed.view(np.uint8)

    def work(rows: slice) -> None:
        v = unpack_lo_first(p8[rows]).reshape(-1, k // g, g).astype(np.float32)
        v -= np.float32(8)
        v *= s[rows]
        round_to(v, kind, out=v)
        v += z[rows]
        round_to(v, kind, out=v)
        round_to(v, out_kind, out=v)
        out[rows] = v.reshape(-1, k)

    for_each(work, n, row_step(k))
    return out


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(
        t["weight"].view(np.int8),
        t["weight_scale"],
        t["weight_zeros"],
        int(o["group_size"]),
        out_dtype,
    )


register_codec("awq_w4a16", dequantize=_dequantize_layer)  # offline AWQ only: no quantizer
