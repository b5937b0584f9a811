"""Build small safetensors files in memory from raw tensor bytes (standard library only).

For examples, tests and small outputs; large outputs go through the streaming writer.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable
from typing import NamedTuple


class RawTensor(NamedTuple):
    """A tensor as stored: name, safetensors dtype, shape and its little-endian bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes


def header_bytes(tensors: Iterable[RawTensor], metadata: dict[str, str] | None = None) -> bytes:
    """The 8-byte length plus the JSON header (space-padded to 8 bytes) for `tensors` in order."""
    hdr: dict[str, object] = {}
    if metadata:
        hdr["__metadata__"] = dict(metadata)
    off = 0
    for t in tensors:
        hdr[t.name] = {
            "dtype": t.dtype,
            "shape": list(t.shape),
            "data_offsets": [off, off + len(t.data)],
        }
        off += len(t.data)
    text = json.dumps(hdr, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def build_safetensors(tensors: list[RawTensor], metadata: dict[str, str] | None = None) -> bytes:
    """A complete safetensors file as bytes."""
    return header_bytes(tensors, metadata) + b"".join(t.data for t in tensors)


def write_safetensors(
    path: str | os.PathLike[str], tensors: list[RawTensor], metadata: dict[str, str] | None = None
) -> None:
    """Write a small safetensors file (whole file in memory; not for large checkpoints)."""
    with open(path, "wb") as f:
        f.write(build_safetensors(tensors, metadata))


def marker_tensor(prefix: str, marker: dict[str, object]) -> RawTensor:
    """`<prefix>.comfy_quant` as ComfyUI writes it: U8 bytes of json.dumps(marker)."""
    data = json.dumps(marker).encode("utf-8")
    return RawTensor(f"{prefix}.comfy_quant", "U8", (len(data),), data)
