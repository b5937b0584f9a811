"""musubi-tuner's own rules (the `checks` hook of its runtime record).

What is modelled: musubi's pre-quantized gate at both modelled releases (runtimes/musubi.py).
725869d's `inspect_convrot_int8_artifact` and 0.3.6's `ConvRotInt8Quantizer.load_and_quantize`
take the same modules for ConvRot INT8: a module with a `.comfy_quant` tensor, a `.weight_scale`
or an I8 `.weight`, which must be a ConvRot INT8 triple (`.weight` I8 [N, K], `.weight_scale` or
`.scale_weight` F32 [N, 1], `.comfy_quant` U8 1-D). Markers are read from tensors only. Where
the two releases differ, the finding has a code of its own whose effect the release data sets
(QC757-QC761); MiniMax H3's text encoder, which 0.3.6 routes by its markers' formats, is
text_encoder.py's; what its DiT loader reads of the header, h3_transformer.py's. musubi raises
at the first problem; quantcheck reports every one. The upstream lines each rule follows are
cited in the rule's evidence (catalog.py).

Standard library only (the check path imports it).
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.markers.checks import marker_place, tensor_marker
from quantcheck.rules.musubi import diag
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.musubi import (
    H3_FAMILY,
    ONE_BYTE_DTYPES,
    READABLE_DTYPES,
    TEXT_ENCODER_FAMILY,
)

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.rules.musubi.text_encoder import Route

TARGET = "musubi"
#: 725869d's message prefix ("Invalid ConvRot INT8 artifact {path}, layer {m}: ...").
WHAT = "musubi 725869d's ConvRot INT8 inspection raises"
#: 0.3.6's loader (`ConvRotInt8Quantizer.load_and_quantize`).
NEW = "musubi 0.3.6's ConvRot INT8 loader raises"
#: The one format and flag musubi loads pre-quantized (`_decode_convrot_control`).
FORMAT = "int8_tensorwise"
#: The sibling tensors of an artifact module, as musubi names them after normalising
#: `.weight_scale` to `.scale_weight` (`canonicalize_convrot_int8_key`).
SIBLINGS = (("weight", "weight"), ("scale_weight", "weight_scale"), ("comfy_quant", "comfy_quant"))
F8 = frozenset({"F8_E4M3", "F8_E5M2"})


def is_power_of_four(value: object) -> bool:
    """Musubi's test: an int (not a bool) of at least 4 that is a power of four."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        return False
    while value % 4 == 0:
        value //= 4
    return value == 1


def is_artifact_module(layer: Layer) -> bool:
    """Whether musubi's gate takes the layer for a ConvRot INT8 module."""
    t = layer.tensors
    w = t.get("weight")
    return "comfy_quant" in t or "weight_scale" in t or (w is not None and w.dtype == "I8")


class MusubiChecks:
    """musubi-tuner's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck
        self._route: list[Route | None] = []

    @property
    def route(self) -> Route | None:
        """How 0.3.6 loads the file as MiniMax H3's text encoder (None: not that family)."""
        if not self._route:
            found = None
            if _family(self.ck) == TEXT_ENCODER_FAMILY:
                from quantcheck.rules.musubi import text_encoder

                found = text_encoder.route(self.ck)
            self._route.append(found)
        return self._route[0]

    def file_findings(self) -> Iterator[Diagnostic]:
        yield from _unreadable_dtypes(self.ck)
        route = self.route
        if route is not None and route.refused:
            from quantcheck.rules.musubi import text_encoder

            yield text_encoder.refused(self.ck, route)
        if self.ck.tensors and _family(self.ck) == H3_FAMILY:
            from quantcheck.rules.musubi import h3_transformer

            yield from h3_transformer.findings(self.ck)

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        t = layer.tensors
        route = self.route  # file_findings found it already
        if route is not None and route.kind in ("nvfp4", "convrot"):
            from quantcheck.rules.musubi import text_encoder as TE

            if route.kind == "convrot" and "comfy_quant" in t:
                yield from TE.convrot_kind(layer)
            elif route.kind == "nvfp4" and "comfy_quant" in t:
                yield from TE.nvfp4_layer(layer)
                return
            elif route.kind == "nvfp4":
                yield from TE.nvfp4_orphans(layer)
        if not is_artifact_module(layer):
            yield from self._byte_weight(layer)
            return
        p = layer.prefix
        if "weight_scale" in t and "scale_weight" in t:
            yield diag(
                R.QC757,
                layer,
                f"both {p}.weight_scale and {p}.scale_weight: 725869d reads both as "
                f'{p}.scale_weight and raises "Duplicate normalized safetensors key '
                f'{p}.scale_weight"; 0.3.6 keeps the one later in the header',
            )
        marker = t.get("comfy_quant")
        if marker is not None and len(marker.shape) != 1:
            yield diag(
                R.QC756,
                layer,
                f".comfy_quant is {len(marker.shape)}-D {list(marker.shape)}: {WHAT} "
                '".comfy_quant must be one-dimensional"; 0.3.6 "expected 1D uint8"',
            )
        missing = [f"{p}.{name}" for name, alt in SIBLINGS if name not in t and alt not in t]
        if missing:
            yield diag(
                R.QC750,
                layer,
                f"module {marker_place(layer)} lacks {', '.join(missing)}: {WHAT} "
                f'"missing sibling tensors: {", ".join(missing)}" and 0.3.6 refuses it too '
                "(every module with an I8 weight, a weight_scale or a .comfy_quant must be a "
                "ConvRot INT8 triple)",
            )
        else:
            yield from _tensors(layer)
        yield from _marker(layer)  # 0.3.6 reads every marker first, complete module or not

    def _byte_weight(self, layer: Layer) -> Iterator[Diagnostic]:
        """QC760: a one-byte weight without a marker (not I8: that is an artifact)."""
        w = layer.weight
        if w is None or w.dtype not in ONE_BYTE_DTYPES:
            return
        route = self.route
        if route is not None and route.kind == "plain" and w.dtype in F8:
            # the H3 text encoder without markers casts F8 weights to BF16; its strict load
            # refuses a tensor the model does not have, such as a legacy scale_weight
            extra = sorted(set(layer.tensors) - {"weight", "bias"})
            if extra:
                yield diag(
                    R.QC760,
                    layer,
                    f"weight is {w.dtype} without a .comfy_quant, beside {extra}: musubi "
                    "0.3.6's MiniMax H3 text encoder casts the weight to BF16 and its strict "
                    f"load_state_dict refuses {layer.prefix}.{extra[0]} (725869d passed it)",
                )
            return
        yield diag(
            R.QC760,
            layer,
            f'weight is {w.dtype} without a .comfy_quant: musubi 0.3.6 raises "Layer '
            f'{w.name} is already in {w.dtype} format but has no .comfy_quant spec" (725869d '
            "passed it through)",
        )


def _tensors(layer: Layer) -> Iterator[Diagnostic]:
    t = layer.tensors
    w = t["weight"]
    named = "weight_scale" if "weight_scale" in t else "scale_weight"
    s = t[named]
    if w.dtype != "I8":
        yield diag(
            R.QC754,
            layer,
            f'weight is {w.dtype}: {WHAT} "weight must be INT8/I8"; {NEW} "Pre-quantized '
            f'ConvRot layer {w.name} must be int8"',
        )
    if len(w.shape) != 2:
        yield diag(
            R.QC754,
            layer,
            f'weight is {list(w.shape)}: {WHAT} "weight must be two-dimensional"; 0.3.6 stops '
            "at its shape[1] or at the model's strict load",
        )
    if s.dtype != "F32":
        yield diag(
            R.QC755 if named == "weight_scale" else R.QC759,
            layer,
            f'{named} is {s.dtype}: {WHAT} "scale must be FP32/F32"'
            + (
                f'; {NEW} "Pre-quantized ConvRot scale {s.name} must be F32"'
                if named == "weight_scale"
                else "; 0.3.6 checks the dtype of a weight_scale only and uses this one as is"
            ),
        )
    if len(w.shape) == 2 and tuple(s.shape) != (w.shape[0], 1):
        yield diag(
            R.QC755,
            layer,
            f'scale is {list(s.shape)}: musubi 725869d and 0.3.6 raise "scale shape must be '
            f'({w.shape[0]}, 1)" (a scalar or [N] scale, which ComfyUI accepts, is refused)',
        )


def _marker(layer: Layer) -> Iterator[Diagnostic]:
    tm = tensor_marker(layer)
    if tm is None:
        return  # not decodable: the generic marker codes (QC201-QC207) report it
    fmt = tm.get("format")
    if fmt != FORMAT:
        yield diag(
            R.QC751,
            layer,
            f"format {fmt!r}: musubi loads only ConvRot int8_tensorwise files pre-quantized; "
            f'{WHAT} "unsupported .comfy_quant format", 0.3.6 "Unsupported comfy_quant format"',
        )
        return
    found = "absent" if "convrot" not in tm else repr(tm["convrot"])
    if not tm.get("convrot"):
        yield diag(
            R.QC752,
            layer,
            f"convrot is {found} at the marker's top level: {WHAT} "
            '".comfy_quant convrot must be true", 0.3.6 "Unsupported comfy_quant format"',
        )
    elif tm["convrot"] is not True:
        yield diag(
            R.QC758,
            layer,
            f'convrot is {found}, not true: {WHAT} ".comfy_quant convrot must be true"; '
            "0.3.6 tests it for truth and loads the layer as ConvRot",
        )
    g = tm.get("convrot_groupsize")
    w = layer.tensors.get("weight")
    if not isinstance(g, int) or not is_power_of_four(g):
        found = "absent" if "convrot_groupsize" not in tm else repr(g)
        yield diag(
            R.QC753,
            layer,
            f"convrot_groupsize is {found} at the marker's top level: {WHAT} "
            '"convrot_groupsize must be an exact power of four and at least 4", 0.3.6 '
            '"Invalid convrot_groupsize"',
        )
    elif w is not None and len(w.shape) >= 2 and w.shape[1] % g:
        yield diag(
            R.QC753,
            layer,
            f'convrot_groupsize {g} does not divide K={w.shape[1]}: {WHAT} "convrot_groupsize '
            f'{g} does not divide input width {w.shape[1]}", 0.3.6 "in_features '
            f'{w.shape[1]} not divisible by group size {g}" (its shape[1], whatever the rank)',
        )


def _family(ck: Checkpoint) -> str | None:
    from quantcheck.model.family_view import checkpoint_family_name

    return checkpoint_family_name(ck)


def _unreadable_dtypes(ck: Checkpoint) -> Iterator[Diagnostic]:
    """QC761: tensors with data in a dtype 0.3.6's reader has no torch dtype for."""
    by_dtype: dict[str, list[Any]] = {}
    for t in ck.tensors.values():
        if t.dtype not in READABLE_DTYPES and t.nbytes:
            by_dtype.setdefault(t.dtype, []).append(t)
    for dtype, found in by_dtype.items():
        n = len(found)
        yield Diagnostic(
            R.QC761,
            f"{n} tensor{'s are' if n != 1 else ' is'} {dtype} (first {found[0].name}): musubi "
            "0.3.6 reads every tensor with MemoryEfficientSafeOpen, which has no torch dtype "
            "for it, and stops with a TypeError",
            file=found[0].file,
            tensor=found[0].name,
            effects=_eff(**{TARGET: Effect.FAILS}),
        )
