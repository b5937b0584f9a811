"""The floor for a header check: what no real check can skip.

One header read and `json.loads` per file, then one `pread` and `json.loads` per `.comfy_quant`
marker, collecting (dtype, shape) of every tensor. `bench_check.py` times quantcheck against it.

    python benchmarks/floor_read.py CHECKPOINT.safetensors [more shards...]

Prints tensors, markers and milliseconds (in process, after imports).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
from typing import Any

MARKER = ".comfy_quant"


def floor_read(paths: list[str]) -> tuple[dict[str, tuple[str, tuple[int, ...]]], dict[str, Any]]:
    """(dtype, shape) per tensor name and the decoded marker per layer prefix, over all paths."""
    meta: dict[str, tuple[str, tuple[int, ...]]] = {}
    markers: dict[str, Any] = {}
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            (n,) = struct.unpack("<Q", os.pread(fd, 8, 0))
            header = json.loads(os.pread(fd, n, 8))
            header.pop("__metadata__", None)
            for name, info in header.items():
                meta[name] = (info["dtype"], tuple(info["shape"]))
                if name.endswith(MARKER):
                    start, end = info["data_offsets"]
                    raw = os.pread(fd, end - start, 8 + n + start)
                    markers[name[: -len(MARKER)]] = json.loads(raw)
        finally:
            os.close(fd)
    return meta, markers


def main(argv: list[str]) -> None:
    start = time.perf_counter()
    meta, markers = floor_read(argv)
    ms = (time.perf_counter() - start) * 1000
    print(f"{len(meta)} tensors, {len(markers)} markers, {ms:.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
