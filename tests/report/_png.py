"""Decode a PNG with the standard library (zlib + struct): size and non-background pixels."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def decode(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of raw pixel bytes) of an 8-bit non-interlaced PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in _CHANNELS, (depth, ctype)
            bpp = _CHANNELS[ctype]
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        _unfilter(ftype, line, prev, bpp)
        rows.append(bytes(line))
        prev = line
    return width, height, [_rgb(r, bpp) for r in rows]


def _unfilter(ftype: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if ftype == 1:
            line[i] = (line[i] + a) & 255
        elif ftype == 2:
            line[i] = (line[i] + b) & 255
        elif ftype == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif ftype == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + pred) & 255


def _rgb(row: bytes, bpp: int) -> bytes:
    if bpp == 3:
        return row
    if bpp == 4:
        return b"".join(row[i : i + 3] for i in range(0, len(row), 4))
    if bpp == 1:
        return bytes(v for g in row for v in (g, g, g))
    return bytes(v for i in range(0, len(row), 2) for v in (row[i],) * 3)


def non_background(rows: list[bytes]) -> tuple[int, tuple[int, int, int]]:
    """(pixels that differ from the most common colour, that colour)."""
    counts: Counter[bytes] = Counter()
    for r in rows:
        counts.update(r[i : i + 3] for i in range(0, len(r), 3))
    bg, n = counts.most_common(1)[0]
    return sum(counts.values()) - n, (bg[0], bg[1], bg[2])
