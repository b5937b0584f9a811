"""Quantize or dequantize one layer lazily: header entries are known up front, bytes are made
when the streaming writer reaches them, and freed once the layer's last tensor is written.

numpy is imported only when a layer is actually converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from quantcheck.formats.table import ceil_to, swizzled
from quantcheck.io.writer import CHUNK, Chunks, Copy, Data, Payload

Shape = tuple[int, ...]
Layout = dict[str, tuple[str, Shape]]
KIND = {"F32": "F32", "F16": "F16", "BF16": "BF16"}
OUT_DTYPES = {"bf16": ("bfloat16", "BF16"), "f16": ("float16", "F16"), "f32": ("float32", "F32")}


def quantized_layout(fmt: str, n: int, k: int, options: dict[str, Any],
                     in_dtype: str) -> tuple[Layout, dict[str, Any]]:
    """The tensors (suffix -> dtype, shape) and marker `numeric.quantize` makes for [n, k]."""
    marker: dict[str, Any] = {"format": fmt}
    if fmt in ("float8_e4m3fn", "float8_e5m2"):
        wd = "F8_E4M3" if fmt == "float8_e4m3fn" else "F8_E5M2"
        return {"weight": (wd, (n, k)), "weight_scale": ("F32", ())}, marker
    if fmt == "int8_tensorwise":
        row = bool(options.get("per_row")) or bool(options.get("convrot"))
        if options.get("convrot"):
            marker.update(convrot=True, convrot_groupsize=int(options.get("convrot_groupsize",
                                                                          256)))
        return {"weight": ("I8", (n, k)), "weight_scale": ("F32", (n, 1) if row else ())}, marker
    if fmt == "nvfp4":
        n16, k16 = ceil_to(n, 16), ceil_to(k, 16)
        if (n16, k16) != (n, k):
            marker["orig_shape"] = [n, k]
        return {"weight": ("U8", (n16, k16 // 2)),
                "weight_scale": ("F8_E4M3", swizzled(n16, k16 // 16)),
                "weight_scale_2": ("F32", ())}, marker
    if fmt == "mxfp8":
        n32, k32 = ceil_to(n, 32), ceil_to(k, 32)
        if (n32, k32) != (n, k):
            marker["orig_shape"] = [n, k]
        return {"weight": ("F8_E4M3", (n32, k32)),
                "weight_scale": ("U8", swizzled(n32, k32 // 32))}, marker
    if fmt == "asym_w4a8_int8":
        g, cg = int(options.get("group_size", 16)), int(options.get("convrot_groupsize", 256))
        bits = int(options.get("bits", 4))
        sym = bool(options.get("symmetric", True))
        sd = "F32" if str(options.get("scale_dtype", "")).lower() in ("float32", "f32") \
            else "F8_E4M3"
        out: Layout = {"weight": ("I8", (n, k // 2 if bits == 4 else 3 * k // 4)),
                       "weight_s_rel": (sd, (n, k // g)), "weight_s_channel": ("F32", (n,))}
        if sym and bits == 4 and options.get("codebook", True):
            out["weight_codebook"] = ("F32", (16,))
        if not sym:
            out["weight_correction"] = (KIND.get(in_dtype, "F32"), (k // g, n))
        marker.update(group_size=g, convrot_groupsize=cg, convrot=True)
        return out, marker
    if fmt == "convrot_w4a4":
        marker["convrot_groupsize"] = int(options.get("convrot_groupsize", 256))
        if options.get("linear_dtype") is not None:
            marker["linear_dtype"] = options["linear_dtype"]
        return {"weight": ("I8", (n, k // 2)), "weight_scale": ("F32", (n,))}, marker
    raise ValueError(f"{fmt} has no quantizer")


def marker_options(fmt: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Quantizer options a marker implies (for re-quantizing a layer its marker describes)."""
    def get(key: str, default: Any) -> Any:
        params = fields["params"] if isinstance(fields.get("params"), dict) else {}
        return fields.get(key, params.get(key, default))

    if fmt == "int8_tensorwise":
        convrot = get("convrot", False) is True
        return {"per_row": True, "convrot": convrot,
                "convrot_groupsize": int(get("convrot_groupsize", 256))}
    if fmt == "asym_w4a8_int8":
        return {"group_size": int(get("group_size", 16)),
                "convrot_groupsize": int(get("convrot_groupsize", 256))}
    if fmt == "convrot_w4a4":
        opts: dict[str, Any] = {"convrot_groupsize": int(get("convrot_groupsize", 256))}
        if get("linear_dtype", None) in ("int4", "int8"):
            opts["linear_dtype"] = get("linear_dtype", None)
        return opts
    return {}


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
        from quantcheck.dtypes import DTYPES

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
            raise ValueError(f"internal error: the converted layer has {got}, planned "
                             f"{self.layout}")
        return arrays


def quantize_layer(weight: Payload, dtype: str, shape: Shape, fmt: str,
                   options: dict[str, Any]) -> tuple[LazyLayer, dict[str, Any]]:
    """A lazily quantized layer and its marker, for a float weight read from `weight`."""
    n, k = shape
    layout, marker = quantized_layout(fmt, n, k, options, dtype)

    def compute() -> dict[str, Any]:
        from quantcheck.numeric import quantize
        from quantcheck.numeric.arrays import from_bytes

        q = quantize(from_bytes(dtype, shape, read_payload(weight)), fmt, **options)
        return {s: a for s, (_, a) in q.tensors.items()}

    return LazyLayer(compute, layout), marker


def dequantize_layer(tensors: dict[str, tuple[str, Shape, Payload]], fmt: str,
                     marker: dict[str, Any], shape: tuple[int, int],
                     out: str = "bf16", edges: tuple[bool, bool] = (False, False)) -> LazyLayer:
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
                    "no bias): padding cannot be told from data")
        return {"weight": w}

    return LazyLayer(compute, {"weight": (st_name, tuple(shape))})
