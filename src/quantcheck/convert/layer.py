"""Quantize or dequantize one layer lazily: header entries are known up front, bytes are made
when the streaming writer reaches them, and freed once the layer's last tensor is written.

numpy is imported only when a layer is actually converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from quantcheck.formats.table import FORMATS, Layout
from quantcheck.io.writer import CHUNK, Chunks, Copy, Data, Payload

Shape = tuple[int, ...]
OUT_DTYPES = {"bf16": ("bfloat16", "BF16"), "f16": ("float16", "F16"), "f32": ("float32", "F32")}


def quantized_layout(
    fmt: str, n: int, k: int, options: dict[str, Any], in_dtype: str
) -> tuple[Layout, dict[str, Any]]:
    """The tensors (suffix -> dtype, shape) and marker `numeric.quantize` makes for [n, k]."""
    spec = FORMATS[fmt]
    if spec.written is None:
        raise ValueError(f"{fmt} has no quantizer")
    layout, fields = spec.written(n, k, spec.with_defaults(options), in_dtype)
    return layout, {"format": fmt, **fields}


def marker_options(fmt: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Quantizer options a marker implies (for re-quantizing a layer its marker describes)."""
    return FORMATS[fmt].options_from_marker(fields)


def read_payload(p: Payload) -> bytes:
    """All bytes of one payload (one tensor: the caller bounds the size)."""
    if isinstance(p, Copy):
        raw = p.source.read(p.offset, p.nbytes)
        if len(raw) != p.nbytes:
            raise OSError(f"{p.source.name}: file ends inside a tensor")
        return raw
    if isinstance(p, Data):
        return p.data
    return b"".join(bytes(c) for c in p.produce())


class LazyLayer:
    """New tensors of one layer, computed on first use and freed after the last is written."""

    def __init__(self, compute: Callable[[], dict[str, Any]], layout: Layout) -> None:
        self.compute = compute
        self.layout = layout
        self._arrays: dict[str, Any] | None = None
        self._left: set[str] = set()
        self.name = ""

    def payload(self, suffix: str) -> Chunks:
        dtype, shape = self.layout[suffix]
        from quantcheck.io.dtypes import DTYPES

        n = 1
        for d in shape:
            n *= d
        return Chunks(n * DTYPES[dtype].bits // 8, lambda: self._emit(suffix))

    def _emit(self, suffix: str) -> Iterator[memoryview]:
        if self._arrays is None or suffix not in self._left:
            self._arrays = self._checked(self._run())
            self._left = set(self._arrays)
        arr = self._arrays[suffix]
        self._left.discard(suffix)
        if not self._left:
            self._arrays = None
        import numpy as np

        view = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data
        for i in range(0, len(view), CHUNK):
            yield view[i : i + CHUNK]

    def trial(self, keep_bytes: int = 64 * 2**20) -> None:
        """Convert now (raises NumericError if the layer cannot be); keep the result if small."""
        arrays = self._checked(self._run())
        if sum(int(a.nbytes) for a in arrays.values()) <= keep_bytes:
            self._arrays, self._left = arrays, set(arrays)

    def _run(self) -> dict[str, Any]:
        from quantcheck.numeric import NumericError

        try:
            return self.compute()
        except NumericError as exc:
            err = NumericError(f"{self.name}: {exc}" if self.name else str(exc))
            err.layer = self.name  # type: ignore[attr-defined]  # which layer to skip
            raise err from exc

    def _checked(self, arrays: dict[str, Any]) -> dict[str, Any]:
        from quantcheck.numeric.arrays import dtype_name

        got = {s: (dtype_name(a), tuple(a.shape)) for s, a in arrays.items()}
        if got != self.layout:
            raise ValueError(
                f"internal error: the converted layer has {got}, planned {self.layout}"
            )
        return arrays


def quantize_layer(
    weight: Payload, dtype: str, shape: Shape, fmt: str, options: dict[str, Any]
) -> tuple[LazyLayer, dict[str, Any]]:
    """A lazily quantized layer and its marker, for a float weight read from `weight`."""
    n, k = shape
    layout, marker = quantized_layout(fmt, n, k, options, dtype)

    def compute() -> dict[str, Any]:
        from quantcheck.numeric import quantize
        from quantcheck.numeric.arrays import from_bytes

        q = quantize(from_bytes(dtype, shape, read_payload(weight)), fmt, **options)
        return {s: a for s, (_, a) in q.tensors.items()}

    return LazyLayer(compute, layout), marker


def dequantize_layer(
    tensors: dict[str, tuple[str, Shape, Payload]],
    fmt: str,
    marker: dict[str, Any],
    shape: tuple[int, int],
    out: str = "bf16",
    edges: tuple[bool, bool] = (False, False),
) -> LazyLayer:
    """A lazily dequantized weight ([N, K] in `out`) from a layer's stored tensors.

    `edges`: (rows, cols) whose size is only a padded bound; the last row / column must then
    hold a non-zero value, which proves it is data, not zero padding.
    """
    np_name, st_name = OUT_DTYPES[out]

    def compute() -> dict[str, Any]:
        from quantcheck.numeric import dequantize
        from quantcheck.numeric.arrays import from_bytes

        arrays = {s: from_bytes(d, sh, read_payload(p)) for s, (d, sh, p) in tensors.items()}
        w = dequantize(fmt, arrays, marker=marker, shape=shape, out_dtype=np_name)
        for axis, (unsure, last) in enumerate(zip(edges, (w[-1:, :], w[:, -1:]), strict=True)):
            if unsure and not last.astype("float32").any():
                from quantcheck.numeric import NumericError

                raise NumericError(
                    f"the {'last row' if axis == 0 else 'last column'} of this padded {fmt} "
                    "layer is all zero and its logical [N, K] is not recorded (no orig_shape, "
                    "no bias): padding cannot be told from data"
                )
        return {"weight": w}

    return LazyLayer(compute, {"weight": (st_name, tuple(shape))})
