"""QC2xx rules on merged markers: format names, keys and their types, orphans, header names;
and the marker each kind of reader sees, from a layer's marker sources (for the runtimes'
checks):

- readers of `.comfy_quant` tensors only (stable-diffusion.cpp, DiffSynth-Studio, musubi-tuner):
  `tensor_marker`, `marker_place`;
- loaders that write each `_quantization_metadata` header entry over the layer's tensor marker
  (Forge Neo's `convert_quantization`, SD.Next's `transcode_quant_metadata`): the header entry
  whole, not a merge — `seen_fields`, `lost_keys`."""

from __future__ import annotations

import json
from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Effect, Fix, Safety
from quantcheck.formats.table import (
    COMFYUI_INT_KEYS,
    FORMATS,
    HEADER_FORMATS,
    FormatSpec,
    marker_int,
    marker_int_text,
)
from quantcheck.model.markers import Marker
from quantcheck.rules import codes as R
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes import load, runtimes

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer
    from quantcheck.runtimes import KeyPlumbing

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE
#: Keys real producers write that no runtime reads: tolerated silently.
TOLERATED = frozenset(
    {
        "orig_dtype",
        "per_row",
        "orig_shape",
        "params",
        "num_experts",
        "group_size",
        "convrot",
        "convrot_groupsize",
        "quant_group_size",
    }
)
MODEL_PREFIXES = ("model.diffusion_model.", "diffusion_model.")
#: Values sglang derives itself; a producer writing them can contradict the derived ones.
DERIVED = frozenset(
    {
        "_activation_scheme",
        "_is_rowwise",
        "_is_tensorwise_scalar",
        "_has_codebook",
        "_has_correction",
        "_has_pre_quant_scale",
    }
)


def _file(m: Marker) -> str:
    return m.sources[-1].file


def _tensor(m: Marker) -> str | None:
    for src in reversed(m.sources):
        if src.origin == "tensor":
            return src.key
    return None


def check_orphans(ck: Checkpoint) -> Iterator[Diagnostic]:
    """Markers whose prefix has no weight: header-name mismatches and stale markers."""
    layers = ck.layers
    orphans = [
        m
        for prefix, m in ck.markers.items()
        if prefix not in layers or "weight" not in layers[prefix].tensors
    ]
    for m in orphans:
        yield from _orphan(ck, m)


def check_marker_fields(m: Marker) -> Iterator[Diagnostic]:
    """Format name, producer `_` keys, and the keys the format reads, of one layer's marker."""
    yield from _format_name(m)
    spec = FORMATS.get(m.format) if isinstance(m.format, str) else None
    yield from _underscore_keys(m)
    if spec is not None and not spec.third_party:
        yield from _keys(m, spec)


def _orphan(ck: Checkpoint, m: Marker) -> Iterator[Diagnostic]:
    """A marker whose prefix has no weight: a header name mismatch or a stale marker."""
    header_only = all(s.origin == "header" for s in m.sources)
    match = _renamed_prefix(ck, m.prefix)
    if header_only and match:
        # a runtime whose key plumbing renames keys before markers meet layers (its `keys`
        # hook; ComfyUI's strips the model prefix, then attaches entries written without it,
        # or drops the tensors an entry's prefix leaves out) decides its own effect
        plumbed = _plumbed(ck, m.prefix, match)
        if plumbed is not None:
            name, effect, said = plumbed
            why = "sglang matches names exactly and treats that layer as unmarked" + said
            effects = _eff(FAILS, **{name: effect})
        else:
            why = "runtimes match names exactly, so that layer is treated as unmarked"
            effects = _eff(FAILS, DEGRADED)
        yield Diagnostic(
            R.QC222,
            f"_quantization_metadata names layer {m.prefix!r}, but the tensors are "
            f"under {match!r}; " + why,
            file=_file(m),
            layer=m.prefix,
            pointer="/__metadata__/_quantization_metadata",
            effects=effects,
            fix=Fix(
                f"write the marker as the tensor {match}.comfy_quant and drop the header entry",
                Safety.SAFE,
                "header-to-tensor-markers",
                (("prefix", match),),
            ),
        )
        return
    fmt = m.format
    validated = (
        isinstance(fmt, str) and FORMATS.get(fmt) is not None and FORMATS[fmt].sglang == "validated"
    )
    shard = ck.absent.get(f"{m.prefix}.weight") or ck.absent.get("")
    if shard:  # the weight is (or may be) in a shard that was not opened: not stale
        where = (
            f"the index places it in {shard}, which is missing"
            if f"{m.prefix}.weight" in ck.absent
            else f"the shard set lacks {shard}, which may hold it"
        )
        text = f"marker for {m.prefix!r} has no {m.prefix}.weight: {where}"
        fix = Fix(
            "supply the missing shard (removing the marker would unmark the layer once the "
            "shard is back)",
            Safety.DISPLAY,
        )
    else:
        text = f"marker for {m.prefix!r} has no {m.prefix}.weight in the checkpoint"
        fix = Fix("remove the stale marker", Safety.SAFE, "drop-marker")
    yield Diagnostic(
        R.QC223,
        text,
        file=_file(m),
        tensor=_tensor(m),
        layer=m.prefix,
        effects=_eff(FAILS if validated else NONE, NONE),
        fix=fix,
    )


def _plumbed(ck: Checkpoint, entry: str, layer: str) -> tuple[str, Effect, str] | None:
    """(runtime, effect, what its message adds) of the first runtime whose key plumbing (its
    `keys` hook) decides what header entry `entry`, stored under `layer`, does to it."""
    for rt in runtimes():
        if rt.keys:
            plumbing: KeyPlumbing = load(rt.keys)
            hit = plumbing.header_entry(ck, entry, layer)
            if hit is not None:
                return rt.name, *hit
    return None


def _renamed_prefix(ck: Checkpoint, prefix: str) -> str | None:
    """The tensor prefix a header layer name means, by adding or removing a model prefix."""
    candidates = [p + prefix for p in MODEL_PREFIXES]
    candidates += [prefix[len(p) :] for p in MODEL_PREFIXES if prefix.startswith(p)]
    for c in candidates:
        layer = ck.layers.get(c)
        if layer is not None and layer.weight is not None:
            return c
    return None


def _format_name(m: Marker) -> Iterator[Diagnostic]:
    fmt = m.format
    if "format" not in m.fields and m.get("format") is None:
        yield Diagnostic(
            R.QC212,
            f'marker has no "format" key: {json.dumps(m.fields)[:120]}',
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
        )
        return
    header = any(s.origin == "header" for s in m.sources)
    if isinstance(fmt, str) and fmt in HEADER_FORMATS and header:
        yield Diagnostic(
            R.QC620,
            f"format {fmt!r} is a header-only format of sglang >= 0.5.23's rowwise FP8 path "
            f"({HEADER_FORMATS[fmt]}): older sglang reads the header as whole-model "
            "per-tensor FP8, ComfyUI does not know it",
            file=_file(m),
            layer=m.prefix,
            pointer="/__metadata__/_quantization_metadata",
        )
        return
    if not isinstance(fmt, str) or fmt not in FORMATS:
        near = _near_format(fmt)
        hint = f"; did you mean {near!r}?" if near else ""
        fix = (
            Fix(f'set "format": {json.dumps(near)}', Safety.SAFE, "set-format", (("format", near),))
            if near
            else None
        )
        yield Diagnostic(
            R.QC213,
            f"format {json.dumps(fmt)} is not a known format{hint}",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
            fix=fix,
        )
        return
    spec = FORMATS[fmt]
    if spec.third_party:
        yield Diagnostic(
            R.QC214,
            f"format {fmt!r} is a third-party format ({spec.title}): {spec.note}; "
            "neither ComfyUI nor sglang loads it",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
            fix=Fix(
                "dequantize or requantize the layer to a supported format",
                Safety.UNSAFE,
                "requantize",
            ),
        )


def _near_format(fmt: Any) -> str | None:
    if not isinstance(fmt, str):
        return None
    low = fmt.strip().lower().replace("-", "_")
    if low in FORMATS and not FORMATS[low].third_party:
        return low
    aliases = {
        "fp8": "float8_e4m3fn",
        "float8": "float8_e4m3fn",
        "fp8_e4m3": "float8_e4m3fn",
        "float8_e4m3": "float8_e4m3fn",
        "fp8_e5m2": "float8_e5m2",
        "int8": None,
        "w4a8": "asym_w4a8_int8",
        "w4a4": "convrot_w4a4",
        "awq": "awq_w4a16",
    }
    return aliases.get(low)


def _underscore_keys(m: Marker) -> Iterator[Diagnostic]:
    keys = [k for k in m.fields if k.startswith("_")]
    if not keys:
        return
    derived = [k for k in keys if k in DERIVED]
    eff = _eff(DEGRADED if derived else NONE, NONE)
    yield Diagnostic(
        R.QC215,
        f"marker carries producer-written underscore keys {keys}; "
        + (
            "sglang derives these itself and a stale value can contradict the file"
            if derived
            else "runtimes reserve _ keys for derived values"
        ),
        file=_file(m),
        tensor=_tensor(m),
        layer=m.prefix,
        effects=eff,
        fix=Fix(f"drop {', '.join(keys)}", Safety.SAFE, "drop-keys", (("keys", tuple(keys)),)),
    )


def _keys(m: Marker, spec: FormatSpec) -> Iterator[Diagnostic]:
    known = {k.name for k in spec.keys} | {"format"}
    for k in m.fields:
        if k not in known and k not in TOLERATED and not k.startswith("_"):
            yield Diagnostic(
                R.QC216,
                f"key {k!r} is not read by {spec.name} layers; it is ignored",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
            )
    for key in spec.keys:
        raw = m.get(key.name)
        present = key.name in m.fields or (
            isinstance(m.fields.get("params"), dict) and key.name in m.fields["params"]
        )
        if key.name == "convrot":
            yield from _convrot(m, spec, raw, present)
        elif key.name in ("convrot_groupsize", "group_size"):
            yield from _size_key(m, spec, key.name, raw, present, key.default, key.allowed)
        elif key.allowed is not None and present and raw not in key.allowed:
            yield Diagnostic(
                R.QC221,
                f"{key.name} is {json.dumps(raw)}; {spec.name} accepts "
                f"{', '.join(json.dumps(a) for a in key.allowed)}",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
                effects=_eff(FAILS, FAILS),
            )
        elif present and not isinstance(raw, key.types):
            yield Diagnostic(
                R.QC221,
                f"{key.name} is {json.dumps(raw)}; it must be a JSON "
                f"{'boolean' if key.types == (bool,) else key.types[0].__name__}",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
                effects=_eff(NONE, FAILS),
            )


def _convrot(m: Marker, spec: FormatSpec, raw: Any, present: bool) -> Iterator[Diagnostic]:
    if spec.name == "asym_w4a8_int8" and not present:
        yield Diagnostic(
            R.QC225,
            'asym_w4a8_int8 marker has no "convrot": true; ComfyUI always '
            "rotates W4A8 (its saver never writes the key) but sglang refuses the "
            "layer without it",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, NONE),
            fix=Fix(
                'add "convrot": true', Safety.SAFE, "set-key", (("key", "convrot"), ("value", True))
            ),
        )
        return
    if present and raw is not True and raw is not False and raw is not None:
        truthy = bool(raw)
        yield Diagnostic(
            R.QC218,
            f"convrot is {json.dumps(raw)}, not a JSON boolean; sglang requires "
            "exactly true for rotated layers"
            if truthy
            else f"convrot is {json.dumps(raw)}, not a JSON boolean",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS if truthy else NONE, NONE),
            fix=Fix(
                f'write "convrot": {json.dumps(truthy)}',
                Safety.SAFE,
                "set-key",
                (("key", "convrot"), ("value", truthy)),
            ),
        )
    elif spec.name == "asym_w4a8_int8" and raw is False:
        yield Diagnostic(
            R.QC225,
            'asym_w4a8_int8 marker sets "convrot": false; ComfyUI rotates W4A8 '
            "anyway and sglang refuses the layer",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, NONE),
            fix=Fix(
                'write "convrot": true',
                Safety.SAFE,
                "set-key",
                (("key", "convrot"), ("value", True)),
            ),
        )


def _size_key(
    m: Marker,
    spec: FormatSpec,
    name: str,
    raw: Any,
    present: bool,
    default: int,
    allowed: tuple[Any, ...] | None,
) -> Iterator[Diagnostic]:
    rotated = spec.name != "int8_tensorwise" or m.get("convrot") is True or bool(m.get("convrot"))
    if name == "convrot_groupsize" and not rotated:
        return
    value = marker_int(raw, default, present)
    comfy_int = name in COMFYUI_INT_KEYS.get(spec.name, ())
    if value is None and comfy_int:
        value = marker_int_text(raw)  # ComfyUI int()s it (ops.py ~L1232-1275); sglang refuses
    code = R.QC219 if name == "convrot_groupsize" else R.QC220
    if value is None:
        yield Diagnostic(
            code,
            f"{name} is {json.dumps(raw)}; it must be a JSON integer",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
        )
        return
    if name == "convrot_groupsize":
        if spec.name == "int8_tensorwise" and not present:
            yield Diagnostic(
                R.QC219,
                "rotated int8_tensorwise marker has no convrot_groupsize; ComfyUI "
                f"assumes {default} but sglang requires the key",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
                effects=_eff(FAILS, NONE),
                fix=Fix(
                    f'add "convrot_groupsize": {default} (ComfyUI\'s default)',
                    Safety.SAFE,
                    "set-key",
                    (("key", "convrot_groupsize"), ("value", default)),
                ),
            )
            return
        power_of_4 = value >= 4 and (value & (value - 1)) == 0 and (value.bit_length() - 1) % 2 == 0
        if allowed and value not in allowed:
            # sglang's W4A8 stage never checks the value, but its kernels (comfy-kitchen's
            # rotation) need a power of 4: the layer fails when it is built.
            sg = FAILS if spec.name != "asym_w4a8_int8" or not power_of_4 else NONE
            yield Diagnostic(
                R.QC219,
                f"convrot_groupsize is {value}; rotation groups are "
                f"{', '.join(map(str, allowed[:-1]))} or {allowed[-1]}",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
                effects=_eff(sg, NONE if power_of_4 else FAILS),
            )
        elif isinstance(raw, str) or (isinstance(raw, float) and spec.name == "int8_tensorwise"):
            yield Diagnostic(
                R.QC219,
                f"convrot_groupsize is {json.dumps(raw)}, not a JSON integer; sglang "
                "compares it by value and type",
                file=_file(m),
                tensor=_tensor(m),
                layer=m.prefix,
                effects=_eff(FAILS if isinstance(raw, str) else NONE, NONE),
                fix=Fix(
                    f'write "convrot_groupsize": {value}',
                    Safety.SAFE,
                    "set-key",
                    (("key", "convrot_groupsize"), ("value", value)),
                ),
            )
        return
    if isinstance(raw, str):
        yield Diagnostic(
            R.QC220,
            f"group_size is {json.dumps(raw)}, not a JSON integer; ComfyUI reads it with int(), "
            "sglang refuses it",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, NONE),
            fix=Fix(
                f'write "group_size": {value}',
                Safety.SAFE,
                "set-key",
                (("key", "group_size"), ("value", value)),
            ),
        )
    if spec.name == "asym_w4a8_int8" and not (value >= 4 and (16 % value == 0 or value % 16 == 0)):
        yield Diagnostic(
            R.QC220,
            f"group_size is {value}; W4A8 needs group_size >= 4 that divides 16 or is "
            "a multiple of 16",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
        )
    elif value <= 0:
        yield Diagnostic(
            R.QC220,
            f"group_size is {value}; it must be positive",
            file=_file(m),
            tensor=_tensor(m),
            layer=m.prefix,
            effects=_eff(FAILS, FAILS),
        )


# --------------------------------------------------------------------------- reader views


def tensor_marker(layer: Layer) -> dict[str, Any] | None:
    """The layer's `.comfy_quant` tensor object (the last shard's when several), ignoring the
    header's `_quantization_metadata`; None when no tensor marker was decoded."""
    if layer.marker is None:
        return None
    found = [s.fields for s in layer.marker.sources if s.origin == "tensor"]
    return found[-1] if found else None


def marker_place(layer: Layer) -> str:
    """Where the layer's marker is, as a tensor-marker reader sees it (for messages)."""
    if layer.marker is None:
        return "without any marker"
    if not any(s.origin == "tensor" for s in layer.marker.sources):
        return "marked only in the header's _quantization_metadata"
    return f"whose .comfy_quant names format {layer.marker.format!r}"


def seen_fields(marker: Marker) -> dict[str, Any]:
    """The marker object such a loader reads: the last header entry if there is one, else the
    merged tensor markers."""
    headers = [s for s in marker.sources if s.origin == "header"]
    return headers[-1].fields if headers else marker.fields


def lost_keys(marker: Marker) -> list[str]:
    """Tensor-marker keys the header entry does not have: the loader never sees them."""
    headers = [s for s in marker.sources if s.origin == "header"]
    if not headers:
        return []
    kept = headers[-1].fields
    out: dict[str, None] = {}
    for s in marker.sources:
        if s.origin == "tensor":
            out.update(dict.fromkeys(k for k in s.fields if k not in kept))
    return list(out)


def tensor_source_file(marker: Marker) -> str | None:
    """The file of the marker's last source (where a finding points)."""
    return marker.sources[-1].file if marker.sources else None
