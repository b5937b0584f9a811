"""What a LoRA patch does to a quantized layer's numbers, the way ComfyUI patches it.

ComfyUI (full load): W = dequantize(stored); W' = calculate_weight(W) = W + s·ΔW in float32
(comfy/lora.py, comfy/weight_adapter/*.py @783545f6); then `requantize_from_float(W',
scale="recalculate", stochastic_rounding=string_to_seed(key))` in the layer's own format:
ComfyUI's stochastic rounding for FP8/NVFP4/MXFP8 and comfy-kitchen's for INT8 and ConvRot
W4A4 and W4A8/W6A8 with the layer's settings (`stochastic.py`, quantcheck's codecs with the same
random stream).

Figures (`survival`):
- retention = <deq(Q(W')) - W, s·ΔW> / ||s·ΔW||^2: the share of the LoRA's direction that
  arrives (1: all of it; 0: none);
- added_error = ||deq(Q(W')) - W'|| / ||s·ΔW||: the noise the re-quantization adds, in units of
  the LoRA's own size;
- requant_error = ||deq(Q(W)) - W|| / ||W||: the same re-quantization of the unpatched layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from quantcheck.formats.table import FORMATS

from . import stochastic
from .api import dequantize, quantize

F32 = np.float32


def _f32(a: Any) -> np.ndarray:
    return np.asarray(a).astype(F32)


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _f32(a).reshape(a.shape[0], -1) @ _f32(b).reshape(b.shape[0], -1)


def lora_delta(
    kind: str,
    parts: Mapping[str, np.ndarray],
    alpha: float | None,
    strength: float,
    shape: tuple[int, int],
    weight: np.ndarray | None = None,
) -> np.ndarray:
    """W' - W for one patch of `kind` ("lora", "loha", "lokr", "diff") at `strength`
    (DoRA when `parts` has "dora_scale": needs `weight`); ValueError when the shapes do not
    make the layer's [N, K] (ComfyUI logs an error and leaves the weight as it was)."""
    n, k = shape
    if kind == "diff":
        d = _f32(parts["diff"])
        if d.shape != (n, k):
            raise ValueError(f"diff {d.shape} is not the weight's {(n, k)}")
        return d * F32(strength)
    if kind == "lora":
        up, down = parts["up"], parts["down"]
        rank = down.shape[0]
        prod = _mm(up, down)
        scale = (alpha / rank) if alpha is not None else 1.0
    elif kind == "loha":
        rank = parts["w1_b"].shape[0]
        prod = _mm(parts["w1_a"], parts["w1_b"]) * _mm(parts["w2_a"], parts["w2_b"])
        scale = (alpha / rank) if alpha is not None else 1.0
    elif kind == "lokr":
        w1 = parts.get("w1")
        w2 = parts.get("w2")
        dim = None
        if w1 is None:
            dim = parts["w1_b"].shape[0]
            w1 = _mm(parts["w1_a"], parts["w1_b"])
        if w2 is None:
            dim = parts["w2_b"].shape[0]
            w2 = _mm(parts["w2_a"], parts["w2_b"])
        prod = np.kron(_f32(w1), _f32(w2).reshape(w2.shape[0], -1))
        scale = (alpha / dim) if alpha is not None and dim is not None else 1.0
    else:
        raise ValueError(f"no numbers for a {kind} patch")
    if prod.size != n * k:
        raise ValueError(f"the patch has {prod.shape}, the weight is {(n, k)}")
    delta = prod.reshape(n, k) * F32(scale)
    dora = parts.get("dora_scale")
    if dora is None:
        return delta * F32(strength)
    if weight is None:
        raise ValueError("a DoRA patch needs the weight")
    return _dora(weight, delta, _f32(dora), strength)


def _dora(weight: np.ndarray, delta: np.ndarray, dora: np.ndarray, strength: float) -> np.ndarray:
    """comfy/weight_adapter/base.py weight_decompose, as W' - W."""
    calc = weight + delta
    on_output = dora.shape[0] == weight.shape[0]
    axis = 1 if on_output else 0
    norm = np.sqrt(np.sum(calc.astype(np.float64) ** 2, axis=axis, keepdims=True)).astype(F32)
    calc = calc * (dora.reshape(norm.shape) / norm)
    return (calc - weight) * F32(strength) if strength != 1.0 else calc - weight


def kitchen_options(
    fmt: str,
    marker: Mapping[str, Any],
    tensors: Mapping[str, tuple[str, tuple[int, ...]]],
    codebook: np.ndarray | None = None,
) -> dict[str, Any]:
    """The settings comfy-kitchen's `requantize_kwargs` keep for a stored layer, from its
    marker, its tensors ((dtype, shape) by suffix) and its stored codebook: per-row INT8,
    rotation groups, the W4A8 code kind, scale dtype and codebook."""
    opts: dict[str, Any] = {}
    for key in ("convrot", "convrot_groupsize", "group_size", "linear_dtype"):
        if key in marker:
            opts[key] = marker[key]
    if fmt == "int8_tensorwise":
        scale = tensors.get("weight_scale", ("F32", ()))[1]
        opts["per_row"] = bool(marker.get("convrot")) or len(scale) > 0
    if fmt in ("asym_w4a8_int8", "w6a8_int8"):
        opts["codebook"] = "weight_codebook" in tensors
        opts["symmetric"] = "weight_correction" not in tensors
        s_rel = tensors.get("weight_s_rel", ("F8_E4M3", ()))[0]
        opts["scale_dtype"] = "float32" if s_rel == "F32" else "float8_e4m3fn"
        if codebook is not None:
            opts["codebook_table"] = codebook
    return opts


def requantize(
    w: np.ndarray, fmt: str, seed: int, options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """ComfyUI's re-quantization of float32 `w` in `fmt` (then dequantized, float32)."""
    if fmt in stochastic.FP8_FORMATS:
        return stochastic.fp8_requant(w, fmt, seed)[0]
    if fmt == "nvfp4":
        return stochastic.nvfp4_requant(w, seed)[0]
    if fmt == "mxfp8":
        return stochastic.mxfp8_requant(w, seed)[0]
    if fmt in ("int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8"):
        return stochastic.kitchen_requant(w, fmt, seed, dict(options or {}))
    allowed = {o.name for o in FORMATS[fmt].options}
    layer = quantize(w, fmt, **{k: v for k, v in (options or {}).items() if k in allowed})
    return dequantize(fmt, layer.arrays(), layer.marker, shape=w.shape)


def survival(
    w: np.ndarray,
    delta: np.ndarray,
    fmt: str,
    seed: int,
    options: Mapping[str, Any] | None = None,
    untouched: np.ndarray | None = None,
) -> dict[str, float]:
    """retention, added_error and requant_error of patching `w` (the dequantized layer) by
    `delta` (= s·ΔW) in `fmt`, re-quantized as ComfyUI does; with `untouched` (a boolean mask
    of the rows no patch covers) also `untouched_error`, how far the re-quantization moves
    those rows, relative to ||s·ΔW|| (0 while the recalculated scales leave them on the
    grid)."""
    got = requantize(w + delta, fmt, seed, options)
    base = requantize(w, fmt, seed, options)
    stochastic.forget_stream()
    out = figures(w, delta, got, base)
    if untouched is not None and out["delta_norm"]:
        moved = (got[untouched] - w[untouched]).astype(np.float64)
        out["untouched_error"] = float(np.linalg.norm(moved.ravel())) / out["delta_norm"]
    return out


def figures(
    w: np.ndarray, delta: np.ndarray, got: np.ndarray, base: np.ndarray
) -> dict[str, float]:
    """The figures of a patch whose runtime computes with `got` (from `w` + `delta`) and, with
    no LoRA, with `base`. Differences in float32, sums accumulated in float64 over row chunks
    in a fixed order."""
    sums = np.zeros(5)  # dd, <arrived, d>, ||err||², ||w||², ||base - w||²
    step = max(1, (1 << 20) // max(1, w.shape[1]))

    def dot(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.einsum("i,i->", a, b, dtype=np.float64))

    for r in range(0, w.shape[0], step):
        rows = slice(r, r + step)
        d, wr = delta[rows].ravel(), w[rows].ravel()
        arrived = got[rows].ravel() - wr
        err = arrived - d
        b = base[rows].ravel() - wr
        sums += (dot(d, d), dot(arrived, d), dot(err, err), dot(wr, wr), dot(b, b))
    dd, ad, ee, ww, bb = (float(v) for v in sums)
    return {
        "retention": ad / dd if dd else 0.0,
        "added_error": float(np.sqrt(ee / dd)) if dd else 0.0,
        "requant_error": float(np.sqrt(bb / ww)) if ww else 0.0,
        "delta_norm": float(np.sqrt(dd)),
        "weight_norm": float(np.sqrt(ww)),
    }
