"""SD.Next's own rules (the `checks` hook of its runtime record): what its native transformer
loader (`detect_comfy_quant`, `build_component_prequantized`, `adopt_nvfp4_layer`) refuses, and
what it reads differently. The upstream lines each rule follows are cited in catalog.py.

SD.Next reads the marker a header entry replaced (`transcode_quant_metadata`), and only its
top-level keys. Its refusals are `degraded`: it falls back to the base model's transformer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.levels import Effect, Safety, Severity
from quantcheck.rules.markers.checks import lost_keys, seen_fields, tensor_source_file
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.sdnext import FALLBACK, NAME

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: COMFY_QUANT_FORMATS: the formats SD.Next adopts, with the weight dtype each expects.
STORAGE = {"int8_tensorwise": "I8", "float8_e4m3fn": "F8_E4M3", "nvfp4": "U8"}
#: (stored, wanted) weight dtypes a relabel fixes: raw bytes (U8) or packed nibbles saved
#: under the other integer label. FP8 codes labelled I8 (or the reverse) are ambiguous.
RELABEL = frozenset({("U8", "F8_E4M3"), ("U8", "I8"), ("I8", "U8")})
NVFP4_GROUP = 16
CONVROT_DEFAULT = 256
#: Keys SD.Next reads at the marker's top level only (never under params).
TOP_LEVEL_KEYS = ("convrot", "convrot_groupsize", "group_size", "full_precision_matrix_mult")


def _deg() -> dict[str, Effect]:
    return _eff(**{NAME: "degraded"})


def _fails() -> dict[str, Effect]:
    return _eff(**{NAME: "fails"})


def py_int(value: Any) -> int | None:
    """Python's int(value) for a JSON value, None where int() raises."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def is_power_of_4(n: int) -> bool:
    return n >= 4 and n & (n - 1) == 0 and n.bit_length() & 1 == 1


def roundup(n: int, m: int) -> int:
    return -(-n // m) * m


def _marked(ck: Checkpoint) -> list[tuple[Layer, dict[str, Any]]]:
    """Layers whose marker SD.Next reads: a tensor marker, or a header entry whose weight is
    there (transcode_quant_metadata skips the others), with the fields it reads."""
    out = []
    for la in ck.layers.values():
        m = la.marker
        if m is None:
            continue
        if la.weight is None and not any(s.origin == "tensor" for s in m.sources):
            continue
        out.append((la, seen_fields(m)))
    return out


class SdnextChecks:
    """SD.Next's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck
        self.marked = _marked(ck)

    def file_findings(self) -> Iterator[Diagnostic]:
        counts: dict[str, int] = {}
        first: dict[str, Layer] = {}
        for la, fields in self.marked:
            fmt = fields.get("format")
            if isinstance(fmt, str):
                counts[fmt] = counts.get(fmt, 0) + 1
                first.setdefault(fmt, la)
        if not counts:
            return
        unsupported = sorted(f for f in counts if f not in STORAGE)
        if unsupported:
            n = sum(counts[f] for f in unsupported)
            many = len(unsupported) > 1
            what = ", ".join(f"{f} ({counts[f]})" if many else f for f in unsupported)
            la = first[unsupported[0]]
            yield Diagnostic(
                R.QC710,
                f"{n} layer{'s' if n != 1 else ''} use{'' if n != 1 else 's'} {what}; SD.Next "
                f"adopts only {', '.join(STORAGE)}. {FALLBACK}",
                file=_file(la),
                layer=la.prefix,
                effects=_deg(),
                fix=Fix(
                    "requantize to int8_tensorwise, float8_e4m3fn or nvfp4",
                    Safety.UNSAFE,
                    "requantize",
                ),
                data={"formats": unsupported},
            )
        if len(counts) > 1:
            what = ", ".join(f"{f} ({c})" for f, c in sorted(counts.items()))
            yield Diagnostic(
                R.QC711,
                f"the file mixes formats across layers ({what}); SD.Next takes one format per "
                f"file. {FALLBACK}",
                file=_file(next(iter(first.values()))),
                effects=_deg(),
                data={"formats": sorted(counts)},
            )

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        m, w = layer.marker, layer.weight
        if m is None or w is None:
            return
        fields = seen_fields(m)
        fmt = fields.get("format")
        file = tensor_source_file(m)
        lost = lost_keys(m)
        if lost:
            yield Diagnostic(
                R.QC716,
                f"the header entry replaces this layer's marker tensor in SD.Next: "
                f"{', '.join(repr(k) for k in lost)} (only in the tensor) "
                f"{'is' if len(lost) == 1 else 'are'} dropped without a message",
                file=file,
                layer=layer.prefix,
                effects=_deg(),
                severity=Severity.ERROR if {"convrot", "convrot_groupsize"} & set(lost) else None,
                fix=Fix(f"add {', '.join(lost)} to the header entry", Safety.DISPLAY),
            )
        yield from _nested_params(layer, fields, file)
        if not isinstance(fmt, str):
            return
        yield from _convrot(layer, fields, fmt, file)
        if fmt == "nvfp4":
            yield from _nvfp4_marker(layer, fields, file)
        if fmt not in STORAGE:
            return
        if w.dtype != STORAGE[fmt]:
            yield Diagnostic(
                R.QC714,
                f"{fmt} weight is {w.dtype}; SD.Next expects {STORAGE[fmt]}. {FALLBACK}",
                file=w.file,
                tensor=w.name,
                layer=layer.prefix,
                effects=_deg(),
                fix=Fix(
                    f"relabel the weight as {STORAGE[fmt]} (same bytes)",
                    Safety.SAFE,
                    "relabel",
                    (("dtype", STORAGE[fmt]),),
                )
                if (w.dtype, STORAGE[fmt]) in RELABEL
                else None,
            )
        elif fmt == "nvfp4":
            yield from _nvfp4_scales(layer, fields)


def _file(layer: Layer) -> str | None:
    m = layer.marker
    if m is not None and m.sources:
        return m.sources[-1].file
    return layer.weight.file if layer.weight else None


def _nested_params(layer: Layer, fields: dict[str, Any], file: str | None) -> Iterator[Diagnostic]:
    """QC717: a key under params whose value differs from what SD.Next uses instead."""
    params = fields.get("params")
    if not isinstance(params, dict):
        return
    fmt = fields.get("format")
    for key in TOP_LEVEL_KEYS:
        if key not in params or key in fields:
            continue
        value = params[key]
        if key == "convrot":
            ignored, worse = bool(value), "loads this rotated layer as unrotated"
        elif key == "convrot_groupsize":
            ignored = bool(fields.get("convrot")) and py_int(value) != CONVROT_DEFAULT
            worse = f"rotates with {CONVROT_DEFAULT}"
        elif key == "group_size":
            ignored = fmt == "nvfp4" and py_int(value) != NVFP4_GROUP
            worse = f"uses groups of {NVFP4_GROUP}"
        else:
            ignored, worse = bool(value), "may run this layer with quantized matmul"
        if not ignored:
            continue
        yield Diagnostic(
            R.QC717,
            f"{key} {json.dumps(value)} is only under params: SD.Next reads marker keys at the "
            f"top level only and {worse}"
            + ("" if key == "full_precision_matrix_mult" else " (wrong output, no error)"),
            file=file,
            layer=layer.prefix,
            effects=_deg(),
            severity=Severity.WARNING if key == "full_precision_matrix_mult" else None,
            fix=Fix(
                f'set "{key}": {json.dumps(value)} at the marker\'s top level (same meaning)',
                Safety.SAFE,
                "set-key",
                (("key", key), ("value", value)),
            ),
        )


def _convrot(
    layer: Layer, fields: dict[str, Any], fmt: str, file: str | None
) -> Iterator[Diagnostic]:
    if not fields.get("convrot") or fmt == "nvfp4":
        return  # nvfp4 + convrot: _nvfp4_marker
    raw = fields.get("convrot_groupsize", CONVROT_DEFAULT)
    g = py_int(raw)
    w = layer.weight
    k = w.shape[1] if w is not None and len(w.shape) == 2 else None
    if g is None:
        yield Diagnostic(
            R.QC713,
            f"convrot_groupsize {json.dumps(raw)} is no integer: SD.Next's int() raises "
            "outside its fallback, so the load stops with an error",
            file=file,
            layer=layer.prefix,
            effects=_fails(),
        )
    elif not is_power_of_4(g):
        yield Diagnostic(
            R.QC713,
            f"convrot_groupsize {g}{' (the default)' if 'convrot_groupsize' not in fields else ''}"
            f" is not a power of 4. {FALLBACK}",
            file=file,
            layer=layer.prefix,
            effects=_deg(),
        )
    elif fmt in STORAGE and k is not None and k % g:
        yield Diagnostic(
            R.QC713,
            f"convrot_groupsize {g} does not divide K={k}. {FALLBACK}",
            file=file,
            layer=layer.prefix,
            effects=_deg(),
        )


def _nvfp4_marker(layer: Layer, fields: dict[str, Any], file: str | None) -> Iterator[Diagnostic]:
    if fields.get("convrot"):
        yield Diagnostic(
            R.QC712,
            'nvfp4 marker with convrot ("combines nvfp4 with convrot, which the format does not '
            f'define"). {FALLBACK}',
            file=file,
            layer=layer.prefix,
            effects=_deg(),
            fix=Fix("remove convrot from the marker", Safety.DISPLAY),
        )
        return
    raw = fields.get("group_size", NVFP4_GROUP)
    g = py_int(raw)
    if g is None:
        yield Diagnostic(
            R.QC712,
            f"nvfp4 group_size {json.dumps(raw)} is no integer: SD.Next's int() raises outside "
            "its fallback, so the load stops with an error",
            file=file,
            layer=layer.prefix,
            effects=_fails(),
        )
    elif g != NVFP4_GROUP:
        yield Diagnostic(
            R.QC712,
            f"nvfp4 group_size {g} is not {NVFP4_GROUP}. {FALLBACK}",
            file=file,
            layer=layer.prefix,
            effects=_deg(),
        )
    shape = _orig_shape(fields)
    if shape is not None and shape[1] % NVFP4_GROUP:
        yield Diagnostic(
            R.QC712,
            f"orig_shape {list(shape)}: K={shape[1]} is not a multiple of {NVFP4_GROUP}. "
            f"{FALLBACK}",
            file=file,
            layer=layer.prefix,
            effects=_deg(),
        )


def _orig_shape(fields: dict[str, Any]) -> tuple[int, int] | None:
    shape = fields.get("orig_shape")
    if (
        isinstance(shape, list)
        and len(shape) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in shape)
    ):
        return shape[0], shape[1]
    return None


def _nvfp4_scales(layer: Layer, fields: dict[str, Any]) -> Iterator[Diagnostic]:
    w, s = layer.weight, layer.tensors.get("weight_scale")
    if w is None or s is None or len(w.shape) != 2:
        return  # a missing scale is QC301; a weight that is not 2-D is QC306
    n, k = _orig_shape(fields) or (w.shape[0], 2 * w.shape[1])
    if k % NVFP4_GROUP:
        return  # QC712 (orig_shape) or QC311
    want = roundup(n, 128) * roundup(k // NVFP4_GROUP, 4)
    have = math.prod(s.shape)
    if have == want:
        return
    yield Diagnostic(
        R.QC715,
        f"weight_scale {list(s.shape)} holds {have} block scales; SD.Next wants the padded "
        f"swizzled layout [{roundup(n, 128)}, {roundup(k // NVFP4_GROUP, 4)}] ({want}) for "
        f"N={n}, K={k}. {FALLBACK}",
        file=s.file,
        tensor=s.name,
        layer=layer.prefix,
        effects=_deg(),
    )
