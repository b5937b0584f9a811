"""Byte-by-byte safetensors writer for tests (independent of `quantcheck`)."""

from __future__ import annotations

import json
import math
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

# (name, dtype, shape) or (name, dtype, shape, data); data defaults to zero bytes.
Tensor = tuple[Any, ...]


def nbytes(dtype: str, shape: Iterable[int]) -> int:
    """Bytes of a tensor of `dtype` and `shape` (bits rounded up)."""
    return (math.prod(shape) * BITS[dtype] + 7) // 8


def marker(obj: Any) -> bytes:
    """A `.comfy_quant` payload: compact JSON as UTF-8 bytes."""
    return json.dumps(obj, separators=(",", ":")).encode()


def raw_file(path: Path, header: bytes | str, data: bytes = b"") -> Path:
    """Write `<u64 len><header><data>` verbatim."""
    header_bytes = header.encode() if isinstance(header, str) else header
    path.write_bytes(struct.pack("<Q", len(header_bytes)) + header_bytes + data)
    return path


def write(
    path: Path,
    tensors: Iterable[Tensor],
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write a valid safetensors file; tensors are laid out in the order given."""
    header: dict[str, Any] = {}
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    blobs: list[bytes] = []
    offset = 0
    for item in tensors:
        name, dtype, shape = item[0], item[1], list(item[2])
        data = item[3] if len(item) > 3 else bytes(nbytes(dtype, shape))
        end = offset + len(data)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, end]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    return raw_file(path, text, b"".join(blobs))


def comfy_marker(name: str, obj: Any) -> Tensor:
    """A U8 `<name>.comfy_quant` tensor holding `obj` as JSON."""
    payload = obj if isinstance(obj, bytes) else marker(obj)
    return (f"{name}.comfy_quant", "U8", [len(payload)], payload)
