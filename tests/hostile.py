"""Build safetensors files byte by byte, including broken and hostile ones (tests only).

Independent of `quantcheck.io.build` on purpose: the header is written with `struct.pack` and
plain JSON text, so a test can produce any byte sequence (a lying length, duplicate keys, bad
UTF-8, offsets with gaps or overlaps) that a correct writer never would.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}  # fmt: skip


def nbytes(dtype: str, shape: Iterable[int]) -> int:
    """Bytes a tensor of `dtype` and `shape` occupies (bits rounded up)."""
    n = 1
    for d in shape:
        n *= d
    return (n * BITS[dtype] + 7) // 8


def raw(
    header: bytes | str | Mapping[str, Any],
    data: bytes = b"",
    *,
    length: int | None = None,
    pad: bool = False,
) -> bytes:
    """`<u64 little-endian length><header><data>` verbatim.

    `header` may be bytes (taken as is), text (UTF-8 encoded) or a dict (compact JSON).
    `length` overrides the length field (to lie about it); `pad` space-pads the header to a
    multiple of 8 like safetensors' writer.
    """
    if isinstance(header, Mapping):
        header = json.dumps(header, separators=(",", ":"))
    hb = header.encode("utf-8") if isinstance(header, str) else bytes(header)
    if pad:
        hb += b" " * (-len(hb) % 8)
    n = len(hb) if length is None else length
    return struct.pack("<Q", n) + hb + data


def entry(dtype: Any, shape: Any, begin: Any, end: Any = None) -> dict[str, Any]:
    """A header entry; `end` defaults to begin + the tensor's byte size."""
    if end is None:
        end = begin + nbytes(dtype, shape)
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def tensors(
    specs: Iterable[tuple[Any, ...]],
    metadata: Mapping[str, Any] | None = None,
    *,
    pad: bool = True,
    trailing: bytes = b"",
) -> bytes:
    """A valid file from (name, dtype, shape) or (name, dtype, shape, data) tuples, in order.

    Data defaults to zero bytes; `trailing` is appended after the data section.
    """
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    blobs: list[bytes] = []
    off = 0
    for spec in specs:
        name, dtype, shape = spec[:3]
        data = spec[3] if len(spec) > 3 else bytes(nbytes(dtype, shape))
        header[name] = entry(dtype, list(shape), off, off + len(data))
        blobs.append(data)
        off += len(data)
    return raw(header, b"".join(blobs) + trailing, pad=pad)


def marker_bytes(obj: Any) -> bytes:
    """A `.comfy_quant` payload as ComfyUI writes it: json.dumps(obj) as UTF-8."""
    return json.dumps(obj).encode("utf-8")


def write(path: Path, data: bytes) -> Path:
    """Write `data` to `path` and return the path."""
    path.write_bytes(data)
    return path
