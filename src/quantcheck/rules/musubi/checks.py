"""musubi-tuner's own rules (the `checks` hook of its runtime record).

What is modelled: kohya-ss/musubi-tuner at 725869d, `src/musubi_tuner/modules/
convrot_int8_utils.py` `inspect_convrot_int8_artifact`, the gate every pre-quantized DiT (and
the Qwen3-VL text encoder) passes before musubi loads it for training or inference. A module
is an artifact module when it has a `.comfy_quant` tensor, a `.weight_scale` or an I8
`.weight`; each must be a ConvRot INT8 triple (`.weight` I8 [N, K], `.weight_scale` or
`.scale_weight` F32 [N, 1], `.comfy_quant` U8 1-D). Markers are read from tensors only.
Musubi raises at the first problem; quantcheck reports every one. The upstream lines each rule
follows are cited in the rule's evidence (catalog.py).

Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.markers.checks import marker_place, tensor_marker
from quantcheck.runtimes import effects as _eff

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

TARGET = "musubi"
#: Musubi's message prefix ("Invalid ConvRot INT8 artifact {path}, layer {m}: ...").
WHAT = "musubi's ConvRot INT8 inspection raises"
#: The one format and flag musubi loads pre-quantized (`_decode_convrot_control`).
FORMAT = "int8_tensorwise"
#: The sibling tensors of an artifact module, as musubi names them after normalising
#: `.weight_scale` to `.scale_weight` (`canonicalize_convrot_int8_key`).
SIBLINGS = (("weight", "weight"), ("scale_weight", "weight_scale"), ("comfy_quant", "comfy_quant"))


def is_power_of_four(value: object) -> bool:
    """Musubi's test: an int (not a bool) of at least 4 that is a power of four."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        return False
    while value % 4 == 0:
        value //= 4
    return value == 1


def is_artifact_module(layer: Layer) -> bool:
    """Whether musubi's inspection takes the layer for a ConvRot INT8 module."""
    t = layer.tensors
    w = t.get("weight")
    return "comfy_quant" in t or "weight_scale" in t or (w is not None and w.dtype == "I8")


class MusubiChecks:
    """musubi-tuner's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        return iter(())

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        if not is_artifact_module(layer):
            return
        t = layer.tensors
        p = layer.prefix
        if "weight_scale" in t and "scale_weight" in t:
            yield _diag(
                R.QC757,
                layer,
                f"both {p}.weight_scale and {p}.scale_weight: musubi reads both as "
                f'{p}.scale_weight and raises "Duplicate normalized safetensors key '
                f'{p}.scale_weight"',
            )
        marker = t.get("comfy_quant")
        if marker is not None and len(marker.shape) != 1:
            yield _diag(
                R.QC756,
                layer,
                f".comfy_quant is {len(marker.shape)}-D {list(marker.shape)}: {WHAT} "
                '".comfy_quant must be one-dimensional"',
            )
        missing = [f"{p}.{name}" for name, alt in SIBLINGS if name not in t and alt not in t]
        if missing:
            yield _diag(
                R.QC750,
                layer,
                f"module {marker_place(layer)} lacks {', '.join(missing)}: {WHAT} "
                f'"missing sibling tensors: {", ".join(missing)}" (every module with an I8 '
                "weight, a weight_scale or a .comfy_quant must be a ConvRot INT8 triple)",
            )
            return
        yield from _tensors(layer)
        yield from _marker(layer)


def _tensors(layer: Layer) -> Iterator[Diagnostic]:
    t = layer.tensors
    w = t["weight"]
    s = t.get("weight_scale") or t["scale_weight"]
    if w.dtype != "I8":
        yield _diag(R.QC754, layer, f'weight is {w.dtype}: {WHAT} "weight must be INT8/I8"')
    if len(w.shape) != 2:
        yield _diag(
            R.QC754,
            layer,
            f'weight is {list(w.shape)}: {WHAT} "weight must be two-dimensional"',
        )
    if s.dtype != "F32":
        yield _diag(R.QC755, layer, f'scale is {s.dtype}: {WHAT} "scale must be FP32/F32"')
    if len(w.shape) == 2 and tuple(s.shape) != (w.shape[0], 1):
        yield _diag(
            R.QC755,
            layer,
            f'scale is {list(s.shape)}: {WHAT} "scale shape must be ({w.shape[0]}, 1)" '
            "(a scalar or [N] scale, which ComfyUI accepts, is refused)",
        )


def _marker(layer: Layer) -> Iterator[Diagnostic]:
    tm = tensor_marker(layer)
    if tm is None:
        return  # not decodable: the generic marker codes (QC201-QC207) report it
    fmt = tm.get("format")
    if fmt != FORMAT:
        yield _diag(
            R.QC751,
            layer,
            f"format {fmt!r}: musubi loads only ConvRot int8_tensorwise files pre-quantized; "
            f'{WHAT} "unsupported .comfy_quant format"',
        )
        return
    if tm.get("convrot") is not True:
        found = "absent" if "convrot" not in tm else repr(tm["convrot"])
        yield _diag(
            R.QC752,
            layer,
            f"convrot is {found} at the marker's top level: {WHAT} "
            '".comfy_quant convrot must be true"',
        )
    g = tm.get("convrot_groupsize")
    w = layer.tensors["weight"]
    if not isinstance(g, int) or not is_power_of_four(g):
        found = "absent" if "convrot_groupsize" not in tm else repr(g)
        yield _diag(
            R.QC753,
            layer,
            f"convrot_groupsize is {found} at the marker's top level: {WHAT} "
            '"convrot_groupsize must be an exact power of four and at least 4"',
        )
    elif len(w.shape) == 2 and w.shape[1] % g:
        yield _diag(
            R.QC753,
            layer,
            f'convrot_groupsize {g} does not divide K={w.shape[1]}: {WHAT} "convrot_groupsize '
            f'{g} does not divide input width {w.shape[1]}"',
        )


def _diag(rule: Any, layer: Layer, message: str) -> Diagnostic:
    w = layer.weight
    file = w.file if w is not None else next(iter(layer.tensors.values())).file
    return Diagnostic(
        rule, message, file=file, layer=layer.prefix, effects=_eff(**{TARGET: Effect.FAILS})
    )
