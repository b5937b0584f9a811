"""The cuBLAS 128x4-tile block-scale layout used by NVFP4 and MXFP8.

Logical element (r, c) of an [R, C] scale matrix lands at byte
``((r//128)*ceil(C/4) + c//4)*512 + (r%32)*16 + ((r%128)//32)*4 + c%4`` of a zero-padded
buffer that is stored with shape [ceil_to(R,128), ceil_to(C,4)].
"""

from __future__ import annotations

import numpy as np

from .errors import NumericError


def ceil_to(x: int, m: int) -> int:
    """Round ``x`` up to a multiple of ``m``."""
    return -(-x // m) * m


def swizzled_shape(rows: int, cols: int) -> tuple[int, int]:
    """On-disk shape of the swizzled scales for a logical [rows, cols] scale matrix."""
    return ceil_to(rows, 128), ceil_to(cols, 4)


def swizzle(scales: np.ndarray) -> np.ndarray:
    """Logical [R, C] scales -> swizzled [ceil_to(R,128), ceil_to(C,4)] (same dtype)."""
    r, c = scales.shape
    pr, pc = swizzled_shape(r, c)
    padded = np.zeros((pr, pc), scales.dtype)
    padded[:r, :c] = scales
    # padded[rb*128 + rs*32 + r32, cb*4 + c4] -> tile (rb, cb), row r32, slot rs, column c4
    tiles = padded.reshape(pr // 128, 4, 32, pc // 4, 4).transpose(0, 3, 2, 1, 4)
    return np.ascontiguousarray(tiles).reshape(pr, pc)


def unswizzle(blocked: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Swizzled buffer (any shape with the right size) -> logical [rows, cols] scales."""
    pr, pc = swizzled_shape(rows, cols)
    if blocked.size != pr * pc:
        raise NumericError(
            f"swizzled scales hold {blocked.size} entries, expected {pr}x{pc} for [{rows}, {cols}]"
        )
    tiles = np.ascontiguousarray(blocked).reshape(pr // 128, pc // 4, 32, 4, 4)
    return tiles.transpose(0, 3, 2, 1, 4).reshape(pr, pc)[:rows, :cols]


def swizzle_offset(r: int, c: int, cols: int) -> int:
    """Byte offset of logical element (r, c) in the swizzled buffer (the §2.3 formula)."""
    ncb = -(-cols // 4)
    return ((r // 128) * ncb + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)
