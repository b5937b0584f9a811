"""Format dispatch: ``quantize(array, format, **options)`` and ``dequantize(format, tensors)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import awq, fp8, int8, mxfp8, nvfp4, w4a4, w4a8
from .arrays import dtype_name
from .errors import NumericError
from .lowp import from_f32, kind_of

FORMATS: tuple[str, ...] = (
    "float8_e4m3fn",
    "float8_e5m2",
    "int8_tensorwise",
    "nvfp4",
    "mxfp8",
    "asym_w4a8_int8",
    "convrot_w4a4",
    "awq_w4a16",
)
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


def _take(options: dict[str, Any], allowed: dict[str, Any], fmt: str) -> dict[str, Any]:
    unknown = set(options) - set(allowed)
    if unknown:
        raise NumericError(
            f"{fmt}: unknown option(s) {sorted(unknown)}; allowed: {sorted(allowed)}"
        )
    return {**allowed, **options}


def quantize(array: np.ndarray, format: str, **options: Any) -> QuantizedLayer:
    """Quantize a 2-D F32/F16/BF16 weight [N, K] like comfy-kitchen's CPU backend does."""
    w = np.asarray(array)
    kind = kind_of(w)
    if w.ndim != 2:
        raise NumericError(f"{format}: expected a 2-D weight [N, K], got shape {w.shape}")
    n, k = (int(s) for s in w.shape)
    if n == 0 or k == 0:
        raise NumericError(f"{format}: empty weight {w.shape}")
    layer = QuantizedLayer(format=format, shape=(n, k), marker={"format": format})
    t = layer.tensors
    if format in fp8.FORMATS:
        _take(options, {}, format)
        q, scale = fp8.quantize(w, format)
        t["weight"] = _entry(q)
        t["weight_scale"] = _entry(np.asarray(scale, np.float32).reshape(()))
    elif format == "int8_tensorwise":
        o = _take(options, {"per_row": False, "convrot": False, "convrot_groupsize": 256}, format)
        q, s = int8.quantize(w, bool(o["per_row"]), bool(o["convrot"]), int(o["convrot_groupsize"]))
        t["weight"], t["weight_scale"] = _entry(q), _entry(s)
        if o["convrot"]:
            layer.marker.update(convrot=True, convrot_groupsize=int(o["convrot_groupsize"]))
    elif format == "nvfp4":
        _take(options, {}, format)
        q, bs, s2 = nvfp4.quantize(w)
        t["weight"], t["weight_scale"] = _entry(q), _entry(bs)
        t["weight_scale_2"] = _entry(np.asarray(s2, np.float32).reshape(()))
        if n % 16 or k % 16:
            layer.marker["orig_shape"] = [n, k]
    elif format == "mxfp8":
        _take(options, {}, format)
        q, e = mxfp8.quantize(w)
        t["weight"], t["weight_scale"] = _entry(q), _entry(e)
        if n % 32 or k % 32:
            layer.marker["orig_shape"] = [n, k]
    elif format == "asym_w4a8_int8":
        o = _take(
            options,
            {"group_size": 16, "convrot_groupsize": 256, "codebook": True, "symmetric": True,
             "bits": 4, "scale_dtype": "float8_e4m3fn"},
            format,
        )
        sd = o["scale_dtype"]
        sd = {"F32": "float32", "F8_E4M3": "float8_e4m3fn"}.get(sd, str(sd).replace("torch.", ""))
        out = w4a8.quantize(w, int(o["group_size"]), int(o["convrot_groupsize"]),
                            bool(o["codebook"]), bool(o["symmetric"]), int(o["bits"]), sd)
        if "weight_correction" in out:
            out["weight_correction"] = from_f32(out["weight_correction"], kind)
        for key, arr in out.items():
            t[key] = _entry(arr)
        layer.marker.update(group_size=int(o["group_size"]),
                            convrot_groupsize=int(o["convrot_groupsize"]), convrot=True)
    elif format == "convrot_w4a4":
        o = _take(options, {"convrot_groupsize": 256, "linear_dtype": None}, format)
        if o["linear_dtype"] not in (None, "int4", "int8"):
            raise NumericError(
                f"convrot_w4a4: linear_dtype must be 'int4' or 'int8', got {o['linear_dtype']!r}"
            )
        q, s = w4a4.quantize(w, int(o["convrot_groupsize"]))
        t["weight"], t["weight_scale"] = _entry(q), _entry(s)
        layer.marker["convrot_groupsize"] = int(o["convrot_groupsize"])
        if o["linear_dtype"] is not None:
            layer.marker["linear_dtype"] = o["linear_dtype"]
    elif format == "awq_w4a16":
        raise NumericError("awq_w4a16 has no quantizer (offline AWQ only); dequantize is supported")
    else:
        raise NumericError(f"unknown format {format!r}; known: {', '.join(FORMATS)}")
    return layer


def _opt(marker: Mapping[str, Any], key: str, default: Any) -> Any:
    params = marker["params"] if isinstance(marker.get("params"), Mapping) else {}
    return marker.get(key, params.get(key, default))


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
    padded = False
    if fmt in fp8.FORMATS:
        q, s = _need(tensors, fmt, "weight", "weight_scale")
        out = fp8.dequantize(q.view(fp8.FORMATS[fmt][0]), s, out_dtype)
    elif fmt == "int8_tensorwise":
        q, s = _need(tensors, fmt, "weight", "weight_scale")
        convrot = bool(_opt(marker, "convrot", False))
        cg = int(_opt(marker, "convrot_groupsize", 256))
        out = int8.dequantize(q.view(np.int8), s, convrot, cg, out_dtype)
    elif fmt == "nvfp4":
        q, bs, s2 = _need(tensors, fmt, "weight", "weight_scale", "weight_scale_2")
        out, padded = nvfp4.dequantize(q, bs, s2, out_dtype), True
    elif fmt == "mxfp8":
        q, e = _need(tensors, fmt, "weight", "weight_scale")
        out, padded = mxfp8.dequantize(q.view(mxfp8.FP8), e, out_dtype), True
    elif fmt == "asym_w4a8_int8":
        q, sr, sc = _need(tensors, fmt, "weight", "weight_s_rel", "weight_s_channel")
        out = w4a8.dequantize(q.view(np.int8), sr, sc, tensors.get("weight_codebook"),
                              tensors.get("weight_correction"), int(_opt(marker, "group_size", 16)),
                              int(_opt(marker, "convrot_groupsize", 256)), out_dtype)
    elif fmt == "convrot_w4a4":
        q, s = _need(tensors, fmt, "weight", "weight_scale")
        cg = int(_opt(marker, "convrot_groupsize", 256))
        out = w4a4.dequantize(q.view(np.int8), s, cg, out_dtype)
    elif fmt == "awq_w4a16":
        q, s, z = _need(tensors, fmt, "weight", "weight_scale", "weight_zeros")
        out = awq.dequantize(q.view(np.int8), s, z, int(_opt(marker, "group_size", 64)), out_dtype)
    else:
        raise NumericError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    want = shape if shape is not None else (marker.get("orig_shape") if padded else None)
    if want is not None:
        n, k = (int(v) for v in want)
        m = 16 if fmt == "nvfp4" else 32
        if padded and (-(-n // m) * m, -(-k // m) * m) == out.shape:
            out = out[:n, :k]
        elif (n, k) != out.shape:
            raise NumericError(f"{fmt}: requested shape {(n, k)} does not fit stored {out.shape}")
    kind = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}[out_dtype]
    return from_f32(out if out.flags.c_contiguous else out.copy(order="C"), kind)
