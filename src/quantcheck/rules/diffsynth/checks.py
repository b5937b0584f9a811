"""DiffSynth-Studio's own rules (the `checks` hook of its runtime record).

DiffSynth-Studio 2.1.12 (`diffsynth/core/quant/backends/comfy_kitchen.py`, upstream @5881b2a)
loads a pre-quantized ComfyUI checkpoint with `load_prequantized`: every targeted Linear becomes
a comfy-kitchen shell, `unflatten_state_dict` turns each layer that has a `<layer>.comfy_quant`
TENSOR into a `QuantizedTensor` (the header `_quantization_metadata` is passed in but never
read), and the result goes to a strict `load_state_dict(assign=True)`. So only tensor markers
count; each is decoded with `bytes(t.to(uint8).tolist()).decode()` and `json.loads` (strict
UTF-8, no BOM; the tensor's values, not its bytes, so only U8/I8 markers survive); its format
must be one of `ACCEPTED`; the layer needs `weight` and `weight_scale`; a rotated INT8 group
must divide K. Upstream lines are cited in the rules' evidence (catalog.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.model.markers import UNREADABLE_MARKER_DTYPES
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import kinds_of
from quantcheck.rules.layers.memo import memo_findings
from quantcheck.rules.levels import Safety
from quantcheck.rules.markers.checks import tensor_marker
from quantcheck.runtimes import effects as _eff

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

NAME = "diffsynth"
#: `FORMATS` of comfy_kitchen.py: the marker formats DiffSynth-Studio 2.1.12 loads.
ACCEPTED = ("float8_e4m3fn", "int8_tensorwise")
#: Per accepted format: the layer tensors `unflatten_state_dict` consumes plus what the shell
#: module takes (the FP8 Linear pops `input_scale` itself); any other sibling reaches the strict
#: `load_state_dict` as an unexpected key.
TAKEN: dict[str, frozenset[str]] = {
    "float8_e4m3fn": frozenset({"weight", "weight_scale", "comfy_quant", "bias", "input_scale"}),
    "int8_tensorwise": frozenset({"weight", "weight_scale", "comfy_quant", "bias"}),
}
#: Marker dtypes whose element values equal their bytes after `.to(torch.uint8)`.
BYTE_DTYPES = frozenset({"U8", "I8"})
#: `TensorWiseInt8Format.DEFAULT_GROUPSIZE`.
DEFAULT_GROUPSIZE = 256
_FAILS = {NAME: "fails"}


def _diag(
    code: Any, message: str, layer: Layer, tensor: str | None = None, **kw: Any
) -> Diagnostic:
    t = layer.tensors.get("comfy_quant") or layer.weight
    return Diagnostic(
        code,
        message,
        file=t.file if t is not None else None,
        layer=layer.prefix,
        tensor=tensor,
        effects=_eff(**_FAILS),
        **kw,
    )


def _group(fields: dict[str, Any], key: str, default: Any) -> Any:
    nested = fields.get("params", {})
    return fields.get(key, nested.get(key, default) if isinstance(nested, dict) else default)


def check_layer(layer: Layer) -> Iterator[Diagnostic]:
    """What `unflatten_state_dict` and the strict load do to one layer."""
    marker_t = layer.tensors.get("comfy_quant")
    if marker_t is None:
        if layer.marker is not None and layer.weight is not None:
            yield _header_only(layer)
        return
    p = layer.prefix
    if marker_t.dtype not in BYTE_DTYPES and marker_t.dtype not in UNREADABLE_MARKER_DTYPES:
        yield _diag(
            R.QC735,
            f"marker tensor is {marker_t.dtype}: DiffSynth-Studio 2.1.12 converts its VALUES "
            "to uint8 (not its bytes) before decoding, so it raises "
            f'"`{p}.comfy_quant` is not valid JSON"; it wants a U8 marker',
            layer,
            tensor=marker_t.name,
            fix=Fix("rewrite the marker as U8 bytes of its JSON text", Safety.DISPLAY),
        )
        return
    fields = tensor_marker(layer)
    if fields is None:
        return  # undecodable marker: QC201-QC204 (fails for DiffSynth by its effects table)
    fmt = fields.get("format")
    if fmt is None or fmt not in ACCEPTED:
        said = (
            f"`{p}.comfy_quant` has no `format` field."
            if fmt is None
            else f"`{p}` uses format `{fmt}`, not in {sorted(ACCEPTED)}."
        )
        yield _diag(
            R.QC730,
            f"marker tensor format is {'missing' if fmt is None else repr(fmt)}; "
            f"DiffSynth-Studio 2.1.12 loads only {' and '.join(ACCEPTED)} and raises "
            f'ValueError: "{said}"',
            layer,
            tensor=marker_t.name,
            data={"format": fmt if isinstance(fmt, str) else None},
        )
        return
    for key in ("weight", "weight_scale"):
        if key not in layer.tensors:
            yield _diag(
                R.QC731,
                f"{fmt} marker tensor but no {p}.{key}: DiffSynth-Studio 2.1.12 raises "
                f'ValueError: "`{p}` has a comfy_quant marker but no `{key}`."',
                layer,
                data={"missing": key},
            )
            return
    w = layer.weight
    assert w is not None
    if fmt == "int8_tensorwise":
        yield from _convrot(layer, fields, w.shape)
    extra = sorted(s for s in layer.tensors if s not in TAKEN[fmt])
    if extra:
        keys = ", ".join(f"'{p}.{s}'" for s in extra)
        yield _diag(
            R.QC734,
            f"{fmt} layer also stores {', '.join(extra)}: DiffSynth-Studio 2.1.12 consumes only "
            "weight, weight_scale and the marker"
            + (" (and input_scale for FP8)" if fmt == "float8_e4m3fn" else "")
            + ", so its strict load_state_dict likely raises RuntimeError: Unexpected key(s) in "
            f"state_dict: {keys}",
            layer,
            data={"tensors": extra},
        )


def _convrot(layer: Layer, fields: dict[str, Any], shape: tuple[int, ...]) -> Iterator[Diagnostic]:
    p = layer.prefix
    convrot = bool(_group(fields, "convrot", False))
    raw = _group(fields, "convrot_groupsize", DEFAULT_GROUPSIZE)
    try:
        group = int(raw)
    except (TypeError, ValueError, OverflowError):
        yield _diag(
            R.QC732,
            f"convrot_groupsize is {raw!r}: DiffSynth-Studio 2.1.12 reads it with int() and "
            "raises before the layer is built",
            layer,
        )
        return
    if len(shape) < 2:
        return  # QC306 (not 2-D)
    k = shape[1]
    if convrot and (group == 0 or k % group):
        yield _diag(
            R.QC732,
            f"rotated int8_tensorwise layer with convrot_groupsize {group} and K={k}: "
            f'DiffSynth-Studio 2.1.12 raises ValueError: "The marker of `{p}` asks for convrot '
            f'with groupsize {group}, which does not divide in_features={k}."',
            layer,
            data={"convrot_groupsize": group, "K": k},
        )


def _header_only(layer: Layer) -> Diagnostic:
    fmt = layer.marker.format if layer.marker is not None else None
    scale = "weight_scale" in layer.tensors
    return _diag(
        R.QC733,
        f"layer is declared {fmt!r} only in the header _quantization_metadata, without a "
        "comfy_quant marker tensor: DiffSynth-Studio 2.1.12 never reads the header, so the "
        "layer is not rebuilt as quantized and its raw "
        f"{layer.weight.dtype if layer.weight is not None else ''} weight goes to a plain "
        "Linear"
        + (
            f"; its strict load_state_dict raises RuntimeError: Unexpected key(s) in "
            f"state_dict: '{layer.prefix}.weight_scale'"
            if scale
            else " (wrong numbers, or a dtype error at the first forward)"
        ),
        layer,
        fix=Fix(
            "write the header markers as comfy_quant tensors (quantcheck fix --profile portable)",
            Safety.DISPLAY,
        ),
    )


def _not_utf8(found: Diagnostic) -> Diagnostic:
    """QC207 (a BOM, or UTF-16/32 marker text) as DiffSynth meets it: a refusal."""
    return Diagnostic(
        R.QC736,
        "marker text starts with a byte-order mark or is UTF-16/32: DiffSynth-Studio 2.1.12 "
        "decodes it with bytes.decode() (strict UTF-8, BOM kept) and json.loads, and raises "
        f'ValueError: "`{found.layer}.comfy_quant` is not valid JSON"; it wants plain UTF-8',
        file=found.file,
        tensor=found.tensor,
        layer=found.layer,
        effects=_eff(**_FAILS),
        fix=Fix("rewrite the marker as plain UTF-8 JSON bytes", Safety.DISPLAY),
    )


class DiffsynthChecks:
    """DiffSynth-Studio's own rules for one checkpoint (judged in the file pass, once per
    `layer_memo.layer_key`: they read the marker tensors apart from the header markers, which
    the engine's layer cache does not tell apart)."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        for d in self.ck.diagnostics:
            if d.code == R.QC207.code:
                yield _not_utf8(d)
        yield from memo_findings(self.ck.layers.values(), check_layer, kinds_of(self.ck))

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        return iter(())
