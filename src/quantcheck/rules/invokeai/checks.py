"""InvokeAI's own rules (the `checks` hook of its runtime record).

InvokeAI 6.14.2 reads no marker: its single-file loaders (Qwen-Image, Wan; FLUX and Z-Image carry
copies) multiply every `<layer>.weight_scale` / `<layer>.scale_weight` into `<layer>.weight`
whatever the format (`_dequantize_comfyui_fp8`: a scale of another shape is repeat-interleaved
along each dimension it differs in, then broadcast), drop the scale, `scale_input` and marker
keys (`_strip_quantization_metadata`), and load the rest into plain modules of the logical
[N, K] shape. So each layer is judged by what that multiply makes of its stored tensors: the
format's own weight (dequantized, no VRAM saving), the wrong numbers (ConvRot, MXFP8), or a
weight of the wrong shape (packed formats: torch refuses it at `load_state_dict`).

The shape arithmetic is `dequantized_shape`; the formats whose product is their weight are
`EXACT_SCALES`. Upstream lines are cited in the rules' evidence (catalog.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import kinds_of
from quantcheck.rules.levels import Safety
from quantcheck.runtimes import effects as _eff

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

NAME = "invokeai"
#: Suffixes whose tensor `_dequantize_comfyui_fp8` multiplies into `<layer>.weight`, in order.
SCALE_SUFFIXES = ("weight_scale", "scale_weight")
#: Suffixes `_strip_quantization_metadata` drops (besides any key containing "comfy_quant").
STRIPPED = frozenset({"weight_scale", "scale_weight", "scale_input", "comfy_quant", "scaled_fp8"})
#: Suffixes a plain Linear takes.
MODULE_KEYS = frozenset({"weight", "bias"})
#: Weight dtypes that are quantized codes (a 16/32-bit weight is not dequantized by a scale).
QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "I8", "U8"})
#: Formats whose product weight x scale is their weight, and the scale shapes for which it is
#: ("1": one element; "row": [N, 1]). Every other marked format's product is not its weight.
EXACT_SCALES: dict[str, frozenset[str]] = {
    "float8_e4m3fn": frozenset({"1"}),
    "float8_e5m2": frozenset({"1"}),
    "int8_tensorwise": frozenset({"1", "row"}),
}


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """torch's broadcast of two shapes, or None when they do not broadcast."""
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def dequantized_shape(
    weight: tuple[int, ...], scale: tuple[int, ...]
) -> tuple[tuple[int, ...] | None, str]:
    """(shape of `weight * scale` as `_dequantize_comfyui_fp8` computes it, or None, why not)."""
    s = list(scale)
    if tuple(s) != tuple(weight) and _numel(scale) > 1:
        for dim in range(len(weight)):
            if dim < len(s) and s[dim] != weight[dim]:
                if s[dim] == 0:
                    return None, f"scale dimension {dim} is 0 (division by zero)"
                block = weight[dim] // s[dim]
                if block > 1:
                    s[dim] *= block
    out = _broadcast(tuple(weight), tuple(s))
    if out is None:
        return None, (
            f"the scale, repeat-interleaved to {list(s)}, does not broadcast against the "
            f"weight {list(weight)}"
        )
    return out, ""


def logical_shape(layer: Layer) -> tuple[int, ...] | None:
    """[N, K] of the layer's format when its marker names one quantcheck knows; else the stored
    weight shape (the module the loader builds is assumed to match it)."""
    w = layer.weight
    if w is None:
        return None
    spec = FORMATS.get(layer.format) if isinstance(layer.format, str) else None
    if spec is None or spec.third_party:
        return tuple(w.shape)
    dims = derive_dims(spec, layer)
    return (dims.N, dims.K) if dims is not None else tuple(w.shape)


def _scale_kind(shape: tuple[int, ...], n: int) -> str:
    if _numel(shape) == 1:
        return "1"
    if tuple(shape) == (n, 1):
        return "row"
    return "other"


def invokeai_view(layer: Layer) -> tuple[str, str, dict[str, Any]]:
    """(outcome, detail, data) of loading the layer the way InvokeAI 6.14.2 does.

    outcome: "plain" (no scale: loaded as stored), "exact" (dequantized to the format's
    weight), "rotated" (ConvRot INT8: rotated weights), "wrong" (the product is not the
    format's weight), "raises" (the multiply raises), "shape" (the product has the wrong shape).
    """
    w = layer.weight
    assert w is not None
    shape: tuple[int, ...] | None = tuple(w.shape)
    scales = [layer.tensors[s] for s in SCALE_SUFFIXES if s in layer.tensors]
    for suffix, s in zip([x for x in SCALE_SUFFIXES if x in layer.tensors], scales, strict=True):
        assert shape is not None
        shape, why = dequantized_shape(shape, tuple(s.shape))
        if shape is None:
            return "raises", f"weight {list(w.shape)} x {suffix} {list(s.shape)}: {why}", {}
    want = logical_shape(layer)
    if shape != want:
        return (
            "shape",
            f"the weight becomes {list(shape or ())} but the layer is {list(want or ())}",
            {"loaded_shape": list(shape or ()), "module_shape": list(want or ())},
        )
    if not scales:
        return "plain", "", {}
    fmt = layer.format
    if fmt is None:
        return "exact", "", {}  # unmarked scaled weights (legacy scaled_fp8 and the like)
    m = layer.marker
    if fmt == "int8_tensorwise" and m is not None and m.get("convrot") is True:
        return "rotated", "", {}
    kinds = EXACT_SCALES.get(fmt) if isinstance(fmt, str) else None
    n = w.shape[0] if w.shape else 0
    if kinds is not None and all(_scale_kind(tuple(s.shape), n) in kinds for s in scales):
        return "exact", "", {}
    return "wrong", "", {}


def _legacy_scales(ck: Checkpoint) -> Iterator[Diagnostic]:
    """Layers scaled by `scale_weight` (legacy scaled_fp8): some InvokeAI loaders drop it."""
    layers = [la for la in ck.layers.values() if la.weight is not None and la.has("scale_weight")]
    if not layers:
        return
    n = len(layers)
    w = layers[0].weight
    assert w is not None
    yield Diagnostic(
        R.QC725,
        f"{n} layer{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} scaled by scale_weight "
        "(legacy scaled_fp8): InvokeAI 6.14.2's Qwen-Image and Wan loaders multiply it in, but "
        "its Z-Image and FLUX.2 single-file loaders drop scale_weight without applying it, so "
        "there the layers load as unscaled FP8 codes: wrong weights, and InvokeAI does NOT raise",
        file=w.file,
        layer=layers[0].prefix if n == 1 else None,
        effects=_eff(**{NAME: "degraded"}),
        fix=Fix(
            "rename scale_weight to weight_scale and mark the layers float8_e4m3fn (every "
            "InvokeAI loader multiplies weight_scale in)",
            Safety.DISPLAY,
        ),
        data={"layers": n},
    )


class InvokeaiChecks:
    """InvokeAI's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        exact: dict[str, int] = {}
        first = ""
        # the view reads only the marker fields and the tensors' dtypes and shapes: the layers
        # of one kind (`layer_kinds`, most of a checkpoint) share one outcome; the kinds come in
        # order of first appearance, so the first exact kind holds the first exact layer
        for kind in kinds_of(self.ck).kinds:
            w = kind.first.tensors["weight"]
            if w.dtype not in QUANTIZED_DTYPES or invokeai_view(kind.first)[0] != "exact":
                continue
            fmt = kind.format if isinstance(kind.format, str) else "unmarked"
            exact[fmt] = exact.get(fmt, 0) + len(kind.layers)
            first = first or w.file
        yield from _legacy_scales(self.ck)
        if not exact:
            return
        n = sum(exact.values())
        what = ", ".join(f"{f} ({c})" for f, c in sorted(exact.items()))
        yield Diagnostic(
            R.QC720,
            f"{n} quantized layer{'s' if n != 1 else ''} ({what}) "
            f"{'are' if n != 1 else 'is'} dequantized to BF16 when InvokeAI 6.14.2 loads the "
            "file (weight x weight_scale, markers dropped): it runs, but with no VRAM or "
            "speed saving over an unquantized checkpoint",
            file=first,
            effects=_eff(**{NAME: "degraded"}),
            data={"formats": sorted(exact)},
        )

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        w = layer.weight
        if w is None:
            return
        outcome, detail, data = invokeai_view(layer)
        file = w.file
        fmt = layer.format if isinstance(layer.format, str) else None
        if outcome in ("raises", "shape"):
            how = (
                "the multiply raises (RuntimeError: the size of tensor a must match the size "
                "of tensor b)"
                if outcome == "raises"
                else "torch refuses it at load_state_dict (size mismatch for "
                f"{layer.prefix}.weight)"
            )
            yield Diagnostic(
                R.QC723,
                f"{fmt or 'this'} layer cannot be loaded by InvokeAI 6.14.2: it multiplies "
                f"every weight_scale into the weight whatever the format, and {detail}; {how}",
                file=file,
                layer=layer.prefix,
                effects=_eff(**{NAME: "fails"}),
                fix=Fix(
                    "requantize the layer to float8_e4m3fn or int8_tensorwise without ConvRot "
                    "(the formats InvokeAI dequantizes correctly), or dequantize it",
                    Safety.UNSAFE,
                ),
                data=data,
            )
            return
        if outcome == "rotated":
            yield Diagnostic(
                R.QC721,
                "int8_tensorwise layer with convrot: InvokeAI 6.14.2 multiplies the rotated "
                "INT8 codes by weight_scale and never rotates back, so the layer computes with "
                "Hadamard-rotated weights: wrong output, and InvokeAI does NOT raise or warn",
                file=file,
                layer=layer.prefix,
                effects=_eff(**{NAME: "degraded"}),
                fix=Fix(
                    "requantize the layer as int8_tensorwise without ConvRot (or float8_e4m3fn) "
                    "for InvokeAI",
                    Safety.UNSAFE,
                ),
            )
        elif outcome == "wrong":
            scales = ", ".join(
                f"{s} {layer.tensors[s].dtype} {list(layer.tensors[s].shape)}"
                for s in SCALE_SUFFIXES
                if s in layer.tensors
            )
            yield Diagnostic(
                R.QC722,
                f"{fmt} layer: InvokeAI 6.14.2 multiplies {scales} into the weight as plain "
                f"numbers, which is not how {fmt} defines its scales (MXFP8: E8M0 exponent "
                "bytes in swizzled order), so the layer loads with wrong weights: garbage "
                "output, and InvokeAI does NOT raise or warn",
                file=file,
                layer=layer.prefix,
                effects=_eff(**{NAME: "degraded"}),
                fix=Fix(
                    "requantize the layer to float8_e4m3fn or int8_tensorwise for InvokeAI",
                    Safety.UNSAFE,
                ),
            )
        leftovers = sorted(s for s in layer.tensors if s not in STRIPPED | MODULE_KEYS)
        if leftovers:
            yield Diagnostic(
                R.QC724,
                f"InvokeAI 6.14.2 keeps {', '.join(leftovers)} of this layer after "
                "dequantizing (it strips only weight_scale, scale_weight, scale_input and "
                'markers): its Wan loader refuses such keys (RuntimeError: "... weights that '
                'WanTransformer3DModel has nowhere to put"); its Qwen-Image, FLUX and Z-Image '
                "loaders ignore them",
                file=file,
                layer=layer.prefix,
                effects=_eff(**{NAME: "degraded"}),
                data={"tensors": leftovers},
            )
