"""w6a8_int8: asym_w4a8_int8's uniform 6-bit layout under its own format name (spec §3.6).

The numerics are :mod:`.w4a8`'s 6-bit path (comfy-kitchen's W4A8 layout with ``bits=6``):
quantize with ``bits=6`` (no codebook, symmetric), dequantize through the int8 grid. This
module only adds what the name promises: the packed row must be 6-bit (``cols*8 == K*6``)
and a codebook or correction tensor beside it is not read (QC302: runtimes ignore it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from quantcheck.formats.codecs import register_codec

from . import w4a8
from .errors import NumericError

FORMAT = "w6a8_int8"


def quantize(
    w: np.ndarray,
    group_size: int = 16,
    convrot_groupsize: int = 256,
    scale_dtype: str = "float8_e4m3fn",
) -> dict[str, np.ndarray]:
    """Weight [N, K] -> weight I8 [N, 3K/4], weight_s_rel [N, K/g], weight_s_channel [N]."""
    return w4a8.quantize(
        w,
        group_size,
        convrot_groupsize,
        codebook=False,
        symmetric=True,
        bits=6,
        scale_dtype=scale_dtype,
    )


def check_six_bit(packed: np.ndarray, s_rel: np.ndarray, group_size: int) -> None:
    """NumericError unless the packed width holds K = s_rel columns x group_size at 6 bits."""
    if packed.ndim != 2 or s_rel.ndim != 2:
        raise NumericError(f"{FORMAT}: weight and weight_s_rel must be 2-D")
    k = s_rel.shape[1] * int(group_size)
    if k <= 0 or packed.shape[1] * 8 != k * 6:
        raise NumericError(
            f"{FORMAT}: packed row width {packed.shape[1]} does not match "
            f"K={k} at 6 bits (weight_s_rel columns x group_size {group_size})"
        )


def dequantize(
    packed: np.ndarray,
    s_rel: np.ndarray,
    s_channel: np.ndarray,
    group_size: int = 16,
    convrot_groupsize: int = 256,
    out_dtype: str = "float32",
) -> np.ndarray:
    """[N, K] weight from the 6-bit codes and both scales, rotated back."""
    check_six_bit(packed, s_rel, group_size)
    return w4a8.dequantize(
        packed, s_rel, s_channel, None, None, group_size, convrot_groupsize, out_dtype
    )


def _scale_dtype(value: object) -> str:
    sd = str(value)
    return {"F32": "float32", "F8_E4M3": "float8_e4m3fn"}.get(sd, sd.replace("torch.", ""))


def _quantize_layer(w: np.ndarray, fmt: str, o: dict[str, Any]) -> dict[str, np.ndarray]:
    return quantize(
        w, int(o["group_size"]), int(o["convrot_groupsize"]), _scale_dtype(o["scale_dtype"])
    )


def _dequantize_layer(
    t: dict[str, np.ndarray], fmt: str, o: dict[str, Any], out_dtype: str
) -> np.ndarray:
    return dequantize(
        t["weight"].view(np.int8),
        t["weight_s_rel"],
        t["weight_s_channel"],
        int(o["group_size"]),
        int(o["convrot_groupsize"]),
        out_dtype,
    )


register_codec(FORMAT, quantize=_quantize_layer, dequantize=_dequantize_layer)
