"""4-bit and 6-bit code packing.

NVFP4 puts element 2j in the HIGH nibble; W4A8, ConvRot W4A4 and AWQ put it in the LOW nibble.
6-bit W4A8 rows are the K/2-byte low-nibble plane followed by a K/4-byte plane holding the top
two bits of column c at byte c//4, bits 2*(c%4)..+1.
"""

from __future__ import annotations

import numpy as np

from .errors import NumericError


def _check_even(codes: np.ndarray) -> None:
    if codes.shape[-1] % 2:
        raise NumericError(f"cannot pack an odd number of 4-bit codes per row ({codes.shape[-1]})")


def pack_hi_first(codes: np.ndarray) -> np.ndarray:
    """uint8 codes 0..15 [.., K] -> bytes [.., K/2], element 2j in bits 7-4."""
    _check_even(codes)
    c = codes.astype(np.uint8, copy=False)
    return (c[..., 0::2] << 4) | c[..., 1::2]


def unpack_hi_first(packed: np.ndarray) -> np.ndarray:
    """Bytes [.., K/2] -> uint8 codes [.., K], element 2j from bits 7-4."""
    p = packed.view(np.uint8)
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.uint8)
    out[..., 0::2] = p >> 4
    out[..., 1::2] = p & 0xF
    return out


def pack_lo_first(codes: np.ndarray) -> np.ndarray:
    """Codes [.., K] (unsigned 0..15 or signed -8..7) -> int8 bytes, element 2j in bits 3-0."""
    _check_even(codes)
    c = codes.astype(np.uint8, copy=False)  # two's complement wraps -8..-1 to 0xF8..0xFF
    return ((c[..., 0::2] & 0xF) | (c[..., 1::2] << 4)).view(np.int8)


def unpack_lo_first(packed: np.ndarray) -> np.ndarray:
    """Bytes [.., K/2] -> unsigned uint8 codes 0..15 [.., K], element 2j from bits 3-0."""
    p = packed.view(np.uint8)
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.uint8)
    out[..., 0::2] = p & 0xF
    out[..., 1::2] = p >> 4
    return out


def unpack_signed_lo_first(packed: np.ndarray) -> np.ndarray:
    """Bytes [.., K/2] -> signed int8 codes -8..7 [.., K], element 2j from bits 3-0."""
    p = packed.view(np.int8)
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.int8)
    out[..., 0::2] = (p << 4) >> 4  # arithmetic shift sign-extends the low nibble
    out[..., 1::2] = p >> 4
    return out


def pack6(codes: np.ndarray) -> np.ndarray:
    """uint8 codes 0..63 [N, K] -> int8 [N, 3K/4]: low-nibble plane, then 2-bit high plane."""
    _n, k = codes.shape
    if k % 4:
        raise NumericError(f"6-bit packing needs K divisible by 4, got {k}")
    c = codes.astype(np.uint8, copy=False)
    low = pack_lo_first(c & 0xF).view(np.uint8)
    hi = (c >> 4) & 0x3
    hplane = hi[:, 0::4] | (hi[:, 1::4] << 2) | (hi[:, 2::4] << 4) | (hi[:, 3::4] << 6)
    return np.concatenate([low, hplane], axis=1).view(np.int8)


def unpack6(packed: np.ndarray, k: int) -> np.ndarray:
    """int8 [N, 3K/4] -> uint8 codes 0..63 [N, K]."""
    p = packed.view(np.uint8)
    codes = unpack_lo_first(p[:, : k // 2])
    hp = p[:, k // 2 :]
    for j in range(4):
        codes[:, j::4] |= ((hp >> (2 * j)) & 0x3) << 4
    return codes
