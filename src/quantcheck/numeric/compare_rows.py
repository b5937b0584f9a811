"""Row ranges of one layer for `compare`: the original's rows read straight from the file and
the quantized copy dequantized a row chunk at a time, so memory holds one chunk per thread.

Built on the codec API (`quantcheck.numeric.dequantize`): a row chunk of an elementwise format
is itself a valid smaller layer (fp8; int8 with a scalar or per-row scale; int8 ConvRot and
convrot_w4a4, whose rotations run along K; NVFP4 and MXFP8 in chunks of 128 rows, whose
swizzled block scales are then one contiguous byte range). Any other layer (W4A8, AWQ, remote
files, shapes that do not fit) has no row plan and `compare` dequantizes it whole.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from quantcheck.io.header import TensorInfo
from quantcheck.io.source import LocalFile
from quantcheck.model.checkpoint import Checkpoint

#: Elements per row chunk (rounded to whole rows and to the format's row multiple).
CHUNK_ELEMS = 1 << 18
#: Float dtypes whose rows are read directly.
_FLOAT_ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2}
_FP8 = ("float8_e4m3fn", "float8_e5m2")


def chunk_rows(k: int, multiple: int = 1) -> int:
    """Rows per chunk for rows of ``k`` elements: a fixed function of the shape, so the order
    in which partial sums are combined never depends on the machine or the thread count."""
    rows = max(1, CHUNK_ELEMS // max(k, 1))
    return max(multiple, -(-rows // multiple) * multiple)


def _ceil(x: int, m: int) -> int:
    return -(-x // m) * m


def read_rows(ck: Checkpoint, t: TensorInfo, r0: int, r1: int) -> np.ndarray:
    """Rows ``r0:r1`` of a tensor (first axis) in its stored dtype, shape [r1-r0, *rest]."""
    from quantcheck.numeric.arrays import from_bytes

    rest = tuple(int(s) for s in t.shape[1:])
    row_bytes = t.nbytes // max(int(t.shape[0]), 1)
    want = (r1 - r0) * row_bytes
    offset = t.begin + r0 * row_bytes
    source = ck.shard_of(t).source
    fd = getattr(source, "_fd", -1)
    if isinstance(source, LocalFile) and isinstance(fd, int) and fd >= 0:
        raw: Any = np.empty(want, np.uint8)  # read straight into the array: no bytes copy
        got = 0
        while got < want:
            n = os.preadv(fd, [memoryview(raw)[got:]], offset + got)
            if n <= 0:
                break
            got += n
    else:
        raw = source.read(offset, want)
        got = len(raw)
    if got != want:
        raise OSError(f"{t.name}: file ends inside rows {r0}..{r1}")
    return from_bytes(t.dtype, (r1 - r0, *rest), raw)


def float_rows(ck: Checkpoint, t: TensorInfo, r0: int, r1: int, k: int) -> np.ndarray:
    """Rows ``r0:r1`` of an F32/F16/BF16 tensor as float32 [r1-r0, k]."""
    x = read_rows(ck, t, r0, r1).reshape(r1 - r0, k)
    if t.dtype == "BF16":
        u = x.view(np.uint16)
        return np.left_shift(u, 16, dtype=np.uint32).view(np.float32)
    return x.astype(np.float32)


@dataclass
class RowPlan:
    """How to produce rows of both sides of one layer: `ref(r0, r1)` and `test(r0, r1)` give
    float32 [r1-r0, k]; `chunks` are the row ranges, in order."""

    n: int
    k: int
    rows: int
    ref: Callable[[int, int], np.ndarray]
    test: Callable[[int, int], np.ndarray]

    @property
    def chunks(self) -> list[tuple[int, int]]:
        return [(r, min(self.n, r + self.rows)) for r in range(0, self.n, self.rows)]


def _local(ck: Checkpoint, *tensors: TensorInfo) -> bool:
    return all(isinstance(ck.shard_of(t).source, LocalFile) for t in tensors)


def _size(t: TensorInfo | None) -> int:
    return -1 if t is None else math.prod(int(s) for s in t.shape)


def plan(q: Checkpoint, o: Checkpoint, prefix: str) -> RowPlan | None:
    """A row plan for layer ``prefix`` (None: compare it whole)."""
    ref_t = o.layers[prefix].tensors.get("weight")
    layer = q.layers[prefix]
    w = layer.tensors.get("weight")
    if ref_t is None or w is None or ref_t.dtype not in _FLOAT_ITEMSIZE or len(ref_t.shape) < 2:
        return None
    n = int(ref_t.shape[0])
    k = _size(ref_t) // max(n, 1)
    if n == 0 or k == 0 or not _local(o, ref_t) or not _local(q, *layer.tensors.values()):
        return None
    fmt = layer.format if isinstance(layer.format, str) else None
    made = _test_rows(q, layer, fmt, n, k)
    if made is None:
        return None
    test, multiple = made

    def ref(r0: int, r1: int) -> np.ndarray:
        return float_rows(o, ref_t, r0, r1, k)

    return RowPlan(n, k, chunk_rows(k, multiple), ref, test)


def _test_rows(
    q: Checkpoint, layer: Any, fmt: str | None, n: int, k: int
) -> tuple[Callable[[int, int], np.ndarray], int] | None:
    """(rows -> float32 [rows, k] of the quantized side, row multiple) or None."""
    from quantcheck.model.layer_data import LayerData
    from quantcheck.numeric import dequantize

    ts = layer.tensors
    w = ts["weight"]
    if fmt is None:
        if w.dtype not in _FLOAT_ITEMSIZE or int(w.shape[0]) != n or _size(w) != n * k:
            return None
        return (lambda r0, r1: float_rows(q, w, r0, r1, k)), 1
    data = LayerData(q, layer)
    marker = dict(layer.marker.fields) if layer.marker else {"format": fmt}
    marker.pop("orig_shape", None)
    if fmt in _FP8 or fmt in ("int8_tensorwise", "convrot_w4a4"):
        s = ts.get("weight_scale")
        stored = (n, k // 2) if fmt == "convrot_w4a4" else (n, k)
        sizes = (1,) if fmt in _FP8 else (n,) if fmt == "convrot_w4a4" else (1, n)
        if tuple(w.shape) != stored or (k % 2 and fmt == "convrot_w4a4") or _size(s) not in sizes:
            return None
        scale = data.read("weight_scale")

        def plain(r0: int, r1: int) -> np.ndarray:
            sc = scale if scale.size == 1 else scale.reshape(-1)[r0:r1]
            return dequantize(
                fmt, {"weight": read_rows(q, w, r0, r1), "weight_scale": sc}, marker=marker
            )

        return plain, 1
    if fmt in ("nvfp4", "mxfp8"):
        block = 16 if fmt == "nvfp4" else 32
        nb, kb = _ceil(n, block), _ceil(k, block)
        s = ts.get("weight_scale")
        stored = (nb, kb // 2) if fmt == "nvfp4" else (nb, kb)
        pc = _ceil(kb // block, 4)
        if tuple(w.shape) != stored or _size(s) != _ceil(nb, 128) * pc:
            return None
        extra = {}
        if fmt == "nvfp4":
            if _size(ts.get("weight_scale_2")) != 1:
                return None
            extra["weight_scale_2"] = data.read("weight_scale_2")
        scales = data.read("weight_scale").reshape(-1)

        def blocked(r0: int, r1: int) -> np.ndarray:
            s1 = nb if r1 == n else r1  # the last chunk takes the zero padding rows too
            tiles = scales[r0 * pc : _ceil(s1, 128) * pc]
            out = dequantize(
                fmt,
                {"weight": read_rows(q, w, r0, s1), "weight_scale": tiles, **extra},
                marker=marker,
            )
            return out[: r1 - r0, :k]

        return blocked, 128
    return None
