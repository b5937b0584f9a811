"""The numbers of a LoRA patch per layer: measured (weights read, `numeric/lora_patch`) or
estimated from the stored scales. Imports numpy (only `quantcheck lora` with numbers asks).

Estimate, when the weights are not read: the layer's largest magnitude from its stored scales
(FP8 scale x 448 (E4M3) / 57344 (E5M2), INT8 row scales x 127, NVFP4 weight_scale_2 x 2688,
MXFP8 block exponents x 448; ComfyUI recalculates those scales from the amax), a weight RMS of
amax / sqrt(2 ln(N K)) (a Gaussian's largest value [GUESS: real weights have heavier tails,
so this overstates the RMS]), the format's re-quantization error measured on a Gaussian
[256, 256] weight with the same codec and rounding, and ||s·ΔW|| exact from the LoRA's factors
(trace((UᵀU)(DDᵀ)), no N x K product). Retention is estimated as 1 for the stochastic-rounding
formats (unbiased in expectation: every format ComfyUI re-quantizes, comfy-kitchen 0.2.40).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from quantcheck.numeric.arrays import from_bytes
from quantcheck.numeric.lora_patch import kitchen_options, lora_delta, requantize, survival
from quantcheck.numeric.stochastic import string_to_seed
from quantcheck.rules.lora.load import patch_shape
from quantcheck.rules.lora.runtimes import runtime_figures
from quantcheck.runtimes.comfyui_lora import REPRODUCED, STOCHASTIC

if TYPE_CHECKING:
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.rules.lora.analyse import Analysis, LayerResult
    from quantcheck.rules.lora.load import Patch

NUMERIC_KINDS = ("lora", "loha", "lokr", "diff")


def read_tensor(ck: Checkpoint, name: str) -> np.ndarray:
    """One tensor of a checkpoint as stored (dtype and shape of its header)."""
    t = ck.tensors[name]
    raw = ck.shard_of(t).source.read(t.begin, t.nbytes)
    if len(raw) != t.nbytes:
        raise OSError(f"{name}: file ends after {len(raw)} of {t.nbytes} bytes")
    return from_bytes(t.dtype, t.shape, raw)


def _parts(ck: Checkpoint, patch: Patch) -> tuple[dict[str, np.ndarray], float | None]:
    arrays: dict[str, np.ndarray] = {}
    alpha = None
    for role, name in patch.parts.items():
        if name not in ck.tensors:
            continue
        if role == "alpha":
            a = np.asarray(read_tensor(ck, name), dtype=np.float64).reshape(-1)
            if a.size != 1 or not np.isfinite(a[0]):
                raise ValueError(f"{name}: alpha is not one finite number (ComfyUI .item())")
            alpha = float(a[0])
        elif role != "reshape":
            arrays[role] = read_tensor(ck, name)
    return arrays, alpha


def _delta(
    items: list[tuple[Checkpoint, Patch]],
    shape: tuple[int, int],
    strength: float,
    weight: np.ndarray | None,
) -> np.ndarray:
    total = np.zeros(shape, np.float32)
    for ck, patch in items:
        arrays, alpha = _parts(ck, patch)
        if patch.kind == "diff" and "diff" in arrays:
            arrays = {"diff": arrays["diff"]}
        part = patch_shape(patch, shape) or shape
        rows = slice(None)
        if patch.offset is not None:
            _, start, size = patch.offset
            rows = slice(start, start + size)
        sub = weight[rows] if weight is not None else None
        d = lora_delta(patch.kind, arrays, alpha, strength, part, sub)
        if patch.function == "swap":  # swap_scale_shift: the delta's halves exchanged
            half = d.shape[0] // 2
            d = np.concatenate([d[half:], d[:half]])
        total[rows] += d
    return total


def _delta_norm(items: list[tuple[Checkpoint, Patch]], strength: float) -> float | None:
    """||s·ΔW|| of plain LoRA patches from their factors (None for other kinds)."""
    total = 0.0
    for ck, patch in items:
        if patch.kind != "lora" or "dora_scale" in patch.parts:
            return None
        arrays, alpha = _parts(ck, patch)
        up = arrays["up"].astype(np.float64).reshape(arrays["up"].shape[0], -1)
        down = arrays["down"].astype(np.float64).reshape(arrays["down"].shape[0], -1)
        scale = (alpha / down.shape[0] if alpha is not None else 1.0) * strength
        total += float(np.trace((up.T @ up) @ (down @ down.T))) * scale * scale
    return math.sqrt(max(total, 0.0))


def _amax_from_scales(base: Checkpoint, prefix: str, fmt: str) -> float | None:
    layer = base.layers[prefix]

    def scales(suffix: str) -> np.ndarray | None:
        t = layer.tensors.get(suffix)
        return None if t is None else np.asarray(read_tensor(base, t.name), dtype=np.float64)

    if fmt in ("float8_e4m3fn", "float8_e5m2"):
        s = scales("weight_scale")
        top = 448.0 if fmt == "float8_e4m3fn" else 57344.0
        return None if s is None else float(np.max(np.abs(s))) * top
    if fmt == "int8_tensorwise":
        s = scales("weight_scale")
        return None if s is None else float(np.max(np.abs(s))) * 127.0
    if fmt == "nvfp4":
        s = scales("weight_scale_2")
        return None if s is None else float(np.max(np.abs(s))) * 2688.0
    if fmt == "mxfp8":
        t = layer.tensors.get("weight_scale")
        if t is None:
            return None
        e = np.asarray(read_tensor(base, t.name)).view(np.uint8)
        return float(2.0 ** (int(e.max()) - 127)) * 448.0
    return None


_REL: dict[tuple[str, str], float] = {}


def _relative_requant_error(fmt: str, options: dict[str, Any]) -> float:
    """The format's re-quantization error ||deq(Q(W)) - W|| / ||W|| on a Gaussian weight."""
    key = (fmt, repr(sorted((k, v) for k, v in options.items() if k != "codebook_table")))
    if key not in _REL:
        w = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32) * 0.02
        got = requantize(w, fmt, 12345, options)
        _REL[key] = float(np.linalg.norm((got - w).ravel()) / np.linalg.norm(w.ravel()))
    return _REL[key]


def _estimate(
    base: Checkpoint, r: LayerResult, items: list[tuple[Checkpoint, Patch]], strength: float
) -> dict[str, Any] | None:
    if r.shape is None:
        return None
    amax = _amax_from_scales(base, r.layer, r.format)
    norm = _delta_norm(items, strength)
    if amax is None or not norm:
        return None
    n, k = r.shape
    opts = layer_options(base, r.layer, r.format)
    rel = _relative_requant_error(r.format, opts)
    rms = amax / math.sqrt(2.0 * math.log(max(n * k, 2)))
    noise = rel * rms * math.sqrt(n * k)
    return {
        "retention": 1.0 if r.format in STOCHASTIC else None,  # unbiased in expectation
        "added_error": noise / norm,
        "requant_error": rel,
        "delta_norm": norm,
        "weight_norm": rms * math.sqrt(n * k),
    }


def _tensors(layer: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {s: (t.dtype, t.shape) for s, t in layer.tensors.items()}


def layer_options(base: Checkpoint, prefix: str, fmt: str) -> dict[str, Any]:
    """kitchen_options of a stored layer (its codebook read when it has one)."""
    layer = base.layers[prefix]
    cb = None
    if "weight_codebook" in layer.tensors:
        cb = np.asarray(read_tensor(base, layer.tensors["weight_codebook"].name), np.float32)
    marker = layer.marker.fields if layer.marker else {}
    return kitchen_options(fmt, marker, _tensors(layer), cb)


def _untouched(r: LayerResult) -> np.ndarray | None:
    """The rows of a layer no slice patch covers (None: no slices)."""
    if not r.slices or r.shape is None:
        return None
    mask = np.ones(r.shape[0], bool)
    for start, size in r.slices:
        mask[start : start + size] = False
    return mask


def _layer_bytes(base: Checkpoint, prefix: str) -> int:
    return sum(t.nbytes for t in base.layers[prefix].tensors.values())


def add_figures(
    analysis: Analysis,
    base: Checkpoint,
    patches: list[list[tuple[Checkpoint, Patch]]],
    max_bytes: int | None,
) -> None:
    """Fill each quantized layer's `figures`: measured while the reads stay within
    `max_bytes` (None: no cap), estimated beyond."""
    used = 0
    measured = estimated = 0
    for r, items in zip(analysis.layers, patches, strict=True):
        if not r.quantized or r.outcome == "raises" or r.shape is None:
            continue
        if any(p.kind not in NUMERIC_KINDS or "reshape" in p.parts for _, p in items):
            continue
        need = _layer_bytes(base, r.layer) + sum(
            ck.tensors[n].nbytes for ck, p in items for n in p.parts.values() if n in ck.tensors
        )
        if r.problem is None and (max_bytes is None or used + need <= max_bytes):
            used += need
            try:
                w = base.layer(r.layer).dequantize(shape=r.shape)
                delta = _delta(items, r.shape, analysis.strength, w)
                opts = layer_options(base, r.layer, r.format)
                r.figures = survival(
                    w, delta, r.format, string_to_seed(r.target), opts, _untouched(r)
                )
                r.basis = "measured" if r.format in REPRODUCED else "measured-round-to-nearest"
                runtime_figures(r, w, delta, opts)
            except (ValueError, OSError) as exc:  # NumericError is a ValueError
                r.basis = f"not computed: {exc}"
                continue
            measured += 1
            continue
        if r.problem is not None:
            r.figures = {"retention": 0.0, "added_error": None, "requant_error": None}
            r.basis = "shape-mismatch"
            runtime_figures(r)
            continue
        try:
            est = _estimate(base, r, items, analysis.strength)
        except (ValueError, OSError) as exc:
            r.basis = f"not estimated: {exc}"
            continue
        if est is not None:
            r.figures = est
            r.basis = "estimated"
            estimated += 1
        runtime_figures(r)
    analysis.bytes_read = used
    analysis.numbers = (
        "measured" if measured and not estimated else "mixed" if measured else "estimated"
    )
