"""Format dispatch: ``quantize(array, format, **options)`` and ``dequantize(format, tensors)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from quantcheck.formats.codecs import codec
from quantcheck.formats.table import FORMATS, FormatSpec

from . import awq, fp8, int8, mxfp8, nvfp4, w4a4, w4a8, w6a8  # noqa: F401  (they register codecs)
from .arrays import dtype_name
from .errors import NumericError
from .lowp import from_f32, kind_of

#: Formats with a codec (dequantize; `quantize` too where the table says so), in table order.
CODEC_FORMATS: tuple[str, ...] = tuple(n for n, f in FORMATS.items() if f.codec)
OUT_DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class QuantizedLayer:
    """One quantized Linear weight: checkpoint tensors by key suffix plus its marker object."""

    format: str
    shape: tuple[int, int]
    tensors: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    marker: dict[str, Any] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        """The tensors without their dtype names (what :func:`dequantize` takes)."""
        return {k: v for k, (_, v) in self.tensors.items()}


def _entry(array: np.ndarray) -> tuple[str, np.ndarray]:
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    return dtype_name(array), array


def _spec(fmt: Any) -> FormatSpec:
    spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
    if spec is None or not spec.codec:
        raise NumericError(f"unknown format {fmt!r}; known: {', '.join(CODEC_FORMATS)}")
    return spec


def quantize(array: np.ndarray, format: str, **options: Any) -> QuantizedLayer:
    """Quantize a 2-D F32/F16/BF16 weight [N, K] like comfy-kitchen's CPU backend does."""
    w = np.asarray(array)
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"{format}: expected a 2-D weight [N, K], got shape {w.shape}")
    n, k = (int(s) for s in w.shape)
    if n == 0 or k == 0:
        raise NumericError(f"{format}: empty weight {w.shape}")
    spec = _spec(format)
    quantizer = codec(format).quantize
    if quantizer is None or spec.written is None:
        raise NumericError(f"{format} has no quantizer (offline only); dequantize is supported")
    try:
        opts = spec.with_defaults(options)
    except ValueError as exc:
        raise NumericError(str(exc)) from None
    _, fields = spec.written(n, k, opts, {"f32": "F32", "f16": "F16", "bf16": "BF16"}[kind])
    layer = QuantizedLayer(format=format, shape=(n, k), marker={"format": format, **fields})
    for suffix, arr in quantizer(w, format, opts).items():
        layer.tensors[suffix] = _entry(arr)
    return layer


def _opt(marker: Mapping[str, Any], key: str, default: Any) -> Any:
    params = marker["params"] if isinstance(marker.get("params"), Mapping) else {}
    return marker.get(key, params.get(key, default))


def _int_opt(marker: Mapping[str, Any], key: str, default: int, fmt: str) -> int:
    """A positive integer marker option (a JSON integer, not a bool); NumericError otherwise."""
    v = _opt(marker, key, default)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 2**20:
        raise NumericError(f"{fmt}: marker {key} is {v!r}; it must be a positive integer")
    return v


def _options(marker: Mapping[str, Any], spec: FormatSpec) -> dict[str, Any]:
    """The marker's options with the table's defaults; integer options must be positive integers
    (a rotation group is checked only where a rotation is on)."""
    options = {key.name: _opt(marker, key.name, key.default) for key in spec.keys}
    optional_rotation = any(k.name == "convrot" and k.default is False for k in spec.keys)
    for key in spec.keys:
        if not isinstance(key.default, int) or isinstance(key.default, bool):
            continue
        if key.name == "convrot_groupsize" and optional_rotation and not options["convrot"]:
            options[key.name] = key.default
            continue
        options[key.name] = _int_opt(marker, key.name, key.default, spec.name)
    return options


def _need(tensors: Mapping[str, np.ndarray], fmt: str, *keys: str) -> list[np.ndarray]:
    missing = [k for k in keys if k not in tensors]
    if missing:
        raise NumericError(f"{fmt}: missing tensor(s) {', '.join(missing)}")
    return [np.asarray(tensors[k]) for k in keys]


def dequantize(
    format: str | None,
    tensors: Mapping[str, Any],
    marker: Mapping[str, Any] | None = None,
    shape: tuple[int, int] | None = None,
    out_dtype: str = "float32",
) -> np.ndarray:
    """Decode checkpoint tensors (suffix -> on-disk array) to the logical [N, K] weight."""
    marker = dict(marker or {})
    fmt = format or marker.get("format")
    if marker.get("format") not in (None, fmt):
        raise NumericError(f"format {fmt!r} disagrees with the marker's {marker.get('format')!r}")
    if out_dtype not in OUT_DTYPES:
        raise NumericError(f"out_dtype must be one of {OUT_DTYPES}, got {out_dtype!r}")
    tensors = {k: (v[1] if isinstance(v, tuple) else v) for k, v in tensors.items()}
    w = tensors.get("weight")
    if w is not None and np.ndim(w) != 2:
        raise NumericError(f"{fmt}: the weight must be 2-D, got shape {np.shape(w)}")
    spec = _spec(fmt)
    fmt = spec.name
    _need(tensors, fmt, *spec.required)
    options = _options(marker, spec)
    out = codec(fmt).dequantize(
        {k: np.asarray(v) for k, v in tensors.items()}, fmt, options, out_dtype
    )
    padded = spec.pad > 0
    want = shape if shape is not None else (marker.get("orig_shape") if padded else None)
    if want is not None:
        if (
            not isinstance(want, list | tuple)
            or len(want) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in want)
        ):
            raise NumericError(f"{fmt}: shape {want!r} is not two positive integers [N, K]")
        n, k = (int(v) for v in want)
        m = spec.pad
        if padded and (-(-n // m) * m, -(-k // m) * m) == out.shape:
            out = out[:n, :k]
        elif (n, k) != out.shape:
            raise NumericError(f"{fmt}: requested shape {(n, k)} does not fit stored {out.shape}")
    kind = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[out_dtype]
    return from_f32(out if out.flags.c_contiguous else out.copy(order="C"), kind)
