"""The fix actions: each turns one diagnostic into edits on a `Draft` and says what it did.

`ACTIONS` maps the `Fix.action` names the rules emit to their implementation; the planner in
`quantcheck.fix.planner` decides which to run. Safe actions keep every value; `UNSAFE_ACTIONS`
change numbers (numpy is imported only inside them and the exact-F64 check).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from typing import Any

from quantcheck.diagnostics import Diagnostic
from quantcheck.fix.draft import QMETA, Draft
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS, ROTATION_GROUPS
from quantcheck.io.writer import CHUNK, Chunks, OutTensor
from quantcheck.model.markers import MARKER_SUFFIX
from quantcheck.rules import codes as R
from quantcheck.rules.markers.infer import infer_marker
from quantcheck.runtimes import targets_of


class Refused(Exception):
    """A fix that cannot be applied; the message says why."""


def _tensor(draft: Draft, d: Diagnostic) -> OutTensor:
    t = draft.get(d.tensor or "")
    if t is None:
        raise Refused(f"{d.tensor} is no longer in the checkpoint")
    return t


def _chunks(t: OutTensor, width: int) -> Iterator[bytes]:
    """The tensor's bytes in chunks of whole elements (at most 8 MiB)."""
    from quantcheck.convert.layer import read_payload
    from quantcheck.io.writer import _narrow

    step = CHUNK - CHUNK % width
    for at in range(0, t.data.nbytes, step):
        yield read_payload(_narrow(t.data, at, min(step, t.data.nbytes - at)))


def _to_f32(dtype: str, raw: bytes) -> bytes:
    """Exact widening of F16/BF16 bytes, or F64 bytes narrowed (caller checks exactness)."""
    if dtype == "BF16":
        out = bytearray(len(raw) * 2)
        out[2::4] = raw[0::2]
        out[3::4] = raw[1::2]
        return bytes(out)
    code, width = ("e", 2) if dtype == "F16" else ("d", 8)
    n = len(raw) // width
    return struct.pack(f"<{n}f", *struct.unpack(f"<{n}{code}", raw))


def _f64_exact(t: OutTensor) -> bool:
    for raw in _chunks(t, 8):
        for (v,) in struct.iter_unpack("<d", raw):
            if v != v:
                continue
            try:
                if struct.unpack("<f", struct.pack("<f", v))[0] != v:
                    return False
            except OverflowError:
                return False
    return True


def _cast_f32(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    return cast_f32(draft, _tensor(draft, d))


def cast_f32(draft: Draft, t: OutTensor) -> str:
    """Cast one F16/BF16/F64 tensor of the draft to F32; Refused unless every value is kept."""
    if t.dtype not in ("F16", "BF16", "F64"):
        raise Refused(f"{t.name} is {t.dtype}; only F16/BF16/F64 are cast to F32")
    if t.dtype == "F64" and not _f64_exact(t):
        raise Refused(
            f"{t.name}: some F64 values are not exactly F32 values; casting would round them"
        )
    width = {"F16": 2, "BF16": 2, "F64": 8}[t.dtype]
    n = t.data.nbytes // width * 4
    src = OutTensor(t.name, t.dtype, t.shape, t.data)
    draft.set(
        t.name, "F32", data=Chunks(n, lambda: (_to_f32(src.dtype, c) for c in _chunks(src, width)))
    )
    return f"cast {t.name} {t.dtype} -> F32 (exact)"


def _relabel(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    t = _tensor(draft, d)
    want = p.get("dtype")
    one = {"U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0"}
    if want not in one or t.dtype not in one:
        raise Refused(f"cannot relabel {t.dtype} as {want}")
    draft.set(t.name, want)
    return f"relabel {t.name} {t.dtype} -> {want} (same bytes)"


def _relabel_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    t = _tensor(draft, d)
    draft.set(t.name, "U8", (t.data.nbytes,))
    return f"relabel {t.name} {t.dtype} {list(t.shape)} -> U8 [{t.data.nbytes}] (same bytes)"


def _reshape(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    t = _tensor(draft, d)
    shape = tuple(int(x) for x in p["shape"])
    n_old = n_new = 1
    for x in t.shape:
        n_old *= x
    for x in shape:
        n_new *= x
    if n_old != n_new:
        raise Refused(f"cannot reshape {list(t.shape)} to {list(shape)}")
    draft.set(t.name, shape=shape)
    return f"reshape {t.name} {list(t.shape)} -> {list(shape)} (same bytes)"


def _drop_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    draft.set_marker(prefix, None)
    return f"remove the marker of {prefix}"


def _drop_tensor(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    t = _tensor(draft, d)
    draft.drop(t.name)
    return f"remove {t.name}"


def _marker_fields(draft: Draft, d: Diagnostic) -> dict[str, Any]:
    fields = draft.marker(d.layer or "")
    if fields is None:
        raise Refused("the marker was removed")
    return fields


def _drop_keys(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    fields = _marker_fields(draft, d)
    for k in p.get("keys", ()):
        fields.pop(k, None)
    return f"drop {', '.join(p.get('keys', ()))} from the marker of {d.layer}"


def _set_key(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    fields = _marker_fields(draft, d)
    key, value = p["key"], p["value"]
    fields[key] = value
    params = fields.get("params")
    if isinstance(params, dict) and key in params:
        params[key] = value
    return f'set "{key}": {json.dumps(value)} in the marker of {d.layer}'


def _set_format(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    fields = _marker_fields(draft, d)
    fields["format"] = p["format"]
    return f'set "format": {json.dumps(p["format"])} in the marker of {d.layer}'


def _header_to_tensor(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    key, prefix = d.layer or "", p["prefix"]
    m = draft.ck.markers.get(key)
    if m is None:
        raise Refused(f"no header marker {key!r}")
    own = draft.ck.markers.get(prefix)
    fields = {**(own.fields if own else {}), **m.fields}
    draft.set_marker(prefix, json.loads(json.dumps(fields)))
    draft.drop_header_entry(key)
    return f"write the header entry {key!r} as the marker tensor {prefix}{MARKER_SUFFIX}"


def _rewrite_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    fields = _marker_fields(draft, d)
    draft.set_marker(d.layer or "", fields)
    return f"rewrite the marker of {d.layer} as one UTF-8 per-tensor marker"


def _rebuild_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    m = draft.ck.markers.get(prefix)
    if m is not None and m.fields:  # another source (a header entry) still marks the layer
        draft.set_marker(prefix, json.loads(json.dumps(m.fields)))
        return f"replace the unreadable marker of {prefix} with its header entry"
    layer = draft.ck.layers.get(prefix)
    fields, why = infer_marker(layer) if layer else (None, "the layer has no tensors")
    if fields is None:
        raise Refused(f"the marker cannot be rebuilt: {why}")
    draft.set_marker(prefix, fields)
    return f"rebuild the marker of {prefix} as {json.dumps(fields)}"


def _add_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    layer = draft.ck.layers.get(prefix)
    fields, why = infer_marker(layer) if layer else (None, "no such layer")
    if layer is not None and "comfy_quant" in layer.tensors:
        raise Refused("the layer has a marker tensor quantcheck could not read; it is kept")
    if fields is None:
        raise Refused(f"ambiguous: {why}")
    draft.set_marker(prefix, fields)
    return f"add the marker {json.dumps(fields)} to {prefix}"


def _file_index(draft: Draft, d: Diagnostic) -> int:
    for i, s in enumerate(draft.ck.shards):
        if s.name == d.file or os.path.basename(s.name) == d.file:
            return i
    raise Refused(f"no shard {d.file!r}")


def _drop_header_metadata(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    f = draft.files[_file_index(draft, d)]
    f.metadata.pop(QMETA, None)
    return f"remove the invalid {QMETA} from {f.name}"


def _header_entry_to_marker(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    key = d.layer or ""
    draft.drop_header_entry(key)
    layer = draft.ck.layers.get(key)
    value = _header_value(draft, d, key)
    if (
        isinstance(value, str)
        and value in FORMATS
        and layer is not None
        and layer.weight is not None
        and key not in draft.ck.markers
    ):
        draft.set_marker(key, {"format": value})
        return f'write the header entry {key!r} as the marker {{"format": "{value}"}}'
    return f"remove the header entry {key!r} (not a marker object)"


def _header_value(draft: Draft, d: Diagnostic, key: str) -> Any:
    meta = draft.files[_file_index(draft, d)].metadata.get(QMETA, "{}")
    try:
        return json.loads(meta).get("layers", {}).get(key)
    except (ValueError, AttributeError):
        return None


def _resolve_conflict(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    m = draft.ck.markers.get(prefix)
    layer = draft.ck.layers.get(prefix)
    if m is None:
        raise Refused("no marker")
    fields = json.loads(json.dumps(m.fields))
    key = d.data.get("field")
    if key == "format":
        w = layer.weight if layer else None
        fits = {
            s.fields.get("format")
            for s in m.sources
            if isinstance(s.fields.get("format"), str)
            and w is not None
            and s.fields["format"] in FORMATS
            and w.dtype in FORMATS[s.fields["format"]].weight_dtypes
        }
        if len(fits) != 1:
            raise Refused(
                "the sources name different formats and the tensors do not tell which one is right"
            )
        fields["format"] = fits.pop()
    draft.set_marker(prefix, fields)
    return f"keep one per-tensor marker for {prefix}: {json.dumps(fields)[:120]}"


def _convert_scaled_fp8(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    ck = draft.ck
    keys = [n for n in ck.tensors if n == "scaled_fp8" or n.endswith(".scaled_fp8")]
    full = any(ck.tensors[k].numel == 2 for k in keys)
    n = 0
    for layer in ck.layers.values():
        sw, w = layer.tensors.get("scale_weight"), layer.weight
        if sw is None or w is None or w.dtype not in ("F8_E4M3", "F8_E5M2"):
            continue
        draft.rename(sw.name, f"{layer.prefix}.weight_scale")
        si = layer.tensors.get("scale_input")
        if si is not None:
            if _is_one(draft, si.name):
                draft.drop(si.name)
            else:
                draft.rename(si.name, f"{layer.prefix}.input_scale")
        fields: dict[str, Any] = {
            "format": "float8_e4m3fn" if w.dtype == "F8_E4M3" else "float8_e5m2"
        }
        if full:
            fields["full_precision_matrix_mult"] = True
        draft.set_marker(layer.prefix, fields)
        n += 1
    for k in keys:
        draft.drop(k)
    return f"convert legacy scaled_fp8 to per-layer markers ({n} layers)"


def _is_one(draft: Draft, name: str) -> bool:
    t = draft.get(name)
    if t is None or t.data.nbytes > 64:
        return False
    from quantcheck.convert.layer import read_payload

    raw = read_payload(t.data)
    code = {"F32": "f", "F16": "e", "F64": "d"}.get(t.dtype)
    if code is None:
        return False
    vals = [v for (v,) in struct.iter_unpack("<" + code, raw)]
    return bool(vals) and all(v == 1.0 for v in vals)


# ----------------------------------------------------------------------------- unsafe


def _layer_tensors(draft: Draft, prefix: str) -> dict[str, tuple[str, tuple[int, ...], Any]]:
    layer = draft.ck.layers[prefix]
    out = {}
    for s, t in layer.tensors.items():
        if s in ("bias", "comfy_quant"):
            continue
        cur = draft.get(t.name)
        if cur is not None:
            out[s] = (cur.dtype, cur.shape, cur.data)
    return out


def logical_shape(
    draft: Draft, prefix: str
) -> tuple[str, dict[str, Any], tuple[int, int], tuple[bool, bool]]:
    """(format, marker, [N, K], edges): for a padded layer whose N or K is not recorded, the
    stored bound, with `edges` saying which last row/column must hold data (zero padding would
    be indistinguishable, so dequantizing then stops with an error instead of guessing)."""
    layer = draft.ck.layers.get(prefix)
    if layer is None or layer.marker is None or layer.weight is None:
        raise Refused("the layer has no marker or weight")
    _gate(layer)
    fmt = layer.marker.format
    spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
    if spec is None or not spec.codec:
        raise Refused(f"no decoder for format {fmt!r}")
    dims = derive_dims(spec, layer)
    if dims is None:
        raise Refused("the weight is not 2-D")
    return (fmt, dict(layer.marker.fields), (dims.N, dims.K), (not dims.n_exact, not dims.k_exact))


def _gate(layer: Any, marker_only: bool = False) -> None:
    """Refuse a numeric conversion of a layer the rules reject (the reason names the finding)."""
    from quantcheck.rules.numeric.gate import numeric_refusal

    why = numeric_refusal(layer, marker_only=marker_only)
    if why:
        raise Refused(f"not converted: {why}")


def _tried(lazy: Any) -> Any:
    """Run an unsafe conversion once while planning, so a layer that cannot be converted is
    refused with its reason instead of failing the whole write."""
    from quantcheck.numeric import NumericError

    try:
        lazy.trial()
    except (NumericError, ValueError) as exc:
        raise Refused(f"the layer cannot be converted: {exc}") from exc
    return lazy


def replace_layer(draft: Draft, prefix: str, lazy: Any, marker: dict[str, Any] | None) -> None:
    """Swap a layer's weight and companions for `lazy`'s tensors (bias kept)."""
    layer = draft.ck.layers[prefix]
    anchor = f"{prefix}.weight"
    for s, info in layer.tensors.items():
        if s not in ("weight", "bias", "comfy_quant"):
            draft.drop(info.name)
    prev = anchor
    for s, (dtype, shape) in lazy.layout.items():
        name = f"{prefix}.{s}"
        t = OutTensor(name, dtype, shape, lazy.payload(s))
        if s == "weight":
            draft.tensors[name] = t
            draft.touched.add(name)
        else:
            draft.add(t, prev)
            prev = name
    draft.set_marker(prefix, marker)


def _dequantize(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    from quantcheck.convert.layer import dequantize_layer

    prefix = d.layer or ""
    fmt, fields, shape, edges = logical_shape(draft, prefix)
    lazy = dequantize_layer(_layer_tensors(draft, prefix), fmt, fields, shape, "bf16", edges)
    replace_layer(draft, prefix, _tried(lazy), None)
    return f"dequantize {prefix} ({fmt}) to BF16 {list(shape)} and remove its marker"


def _requantize_to(draft: Draft, prefix: str, fmt_to: str, options: dict[str, Any]) -> str:
    from quantcheck.convert.layer import LazyLayer, quantized_layout

    fmt, fields, (n, k), edges = logical_shape(draft, prefix)
    from quantcheck.convert.eligible import shape_refusal

    why = shape_refusal(fmt_to, n, k, options, "comfyui")
    if why:
        raise Refused(why)
    layout, marker = quantized_layout(fmt_to, n, k, options, "F32")
    tensors = _layer_tensors(draft, prefix)

    def compute() -> dict[str, Any]:
        from quantcheck.convert.layer import dequantize_layer

        w = dequantize_layer(tensors, fmt, fields, (n, k), "f32", edges).compute()["weight"]
        from quantcheck.numeric import quantize

        return {s: a for s, (_, a) in quantize(w, fmt_to, **options).tensors.items()}

    replace_layer(draft, prefix, _tried(LazyLayer(compute, layout)), marker)
    return f"requantize {prefix} from {fmt} to {json.dumps(marker)}"


def _requantize(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    layer = draft.ck.layers.get(prefix)
    if layer is not None:
        _gate(layer)
    fmt = layer.marker.format if layer and layer.marker else None
    fields = dict(layer.marker.fields) if layer and layer.marker else {}
    if d.code == R.QC601.code and fmt == "float8_e5m2":
        return _requantize_to(draft, prefix, "float8_e4m3fn", {})
    if d.code == R.QC312.code:
        return _requantize_to(draft, prefix, "asym_w4a8_int8", _w4a8_sizes(fields))
    if d.code == R.QC316.code:
        _, _, (_, k), _ = logical_shape(draft, prefix)
        cg = next((g for g in reversed(ROTATION_GROUPS) if k % g == 0), None)
        if cg is None:
            raise Refused(
                f"K={k} is not a multiple of any rotation group "
                f"({', '.join(map(str, ROTATION_GROUPS))})"
            )
        return _requantize_to(
            draft,
            prefix,
            "int8_tensorwise",
            {"per_row": True, "convrot": True, "convrot_groupsize": cg},
        )
    return _dequantize(draft, d, p, target)


def _requantize_symmetric(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    prefix = d.layer or ""
    layer = draft.ck.layers[prefix]
    _gate(layer)
    fields = dict(layer.marker.fields) if layer.marker else {}
    return _requantize_to(draft, prefix, "asym_w4a8_int8", _w4a8_sizes(fields))


def _w4a8_sizes(fields: dict[str, Any]) -> dict[str, Any]:
    """group_size and convrot_groupsize of a W4A8 marker (the table's defaults if absent)."""
    opts = FORMATS["asym_w4a8_int8"].options_from_marker(fields)
    return {"group_size": opts["group_size"], "convrot_groupsize": opts["convrot_groupsize"]}


def _quantize_marked(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    from quantcheck.convert.eligible import format_refusal, shape_refusal
    from quantcheck.convert.layer import marker_options, quantize_layer

    prefix = d.layer or ""
    layer = draft.ck.layers[prefix]
    _gate(layer, marker_only=True)
    fields = dict(layer.marker.fields) if layer.marker else {}
    fmt = fields.get("format")
    w = draft.get(f"{prefix}.weight")
    if not isinstance(fmt, str) or w is None or len(w.shape) != 2:
        raise Refused("not a 2-D layer with a known format")
    spec = FORMATS.get(fmt)
    if spec is None or not spec.quantizable:
        raise Refused(f"{fmt} has no quantizer")
    options = marker_options(fmt, fields)
    n, k = w.shape
    for t in targets_of(target):
        why = format_refusal(fmt, options, t) or shape_refusal(fmt, n, k, options, t)
        if why:
            raise Refused(f"quantizing would not load on {t}: {why}")
    lazy, marker = quantize_layer(w.data, w.dtype, (n, k), fmt, options)
    keep = {k2: v for k2, v in fields.items() if k2 not in marker and not k2.startswith("_")}
    replace_layer(draft, prefix, _tried(lazy), {**marker, **keep})
    return f"quantize {prefix} ({w.dtype} {[n, k]}) as its marker says: {fmt}"


Action = Callable[[Draft, Diagnostic, dict[str, Any], str], str]
ACTIONS: dict[str, Action] = {
    "cast-f32": _cast_f32,
    "relabel": _relabel,
    "reshape": _reshape,
    "drop-marker": _drop_marker,
    "drop-tensor": _drop_tensor,
    "drop-keys": _drop_keys,
    "set-key": _set_key,
    "set-format": _set_format,
    "header-to-tensor-markers": _header_to_tensor,
    "add-marker": _add_marker,
    "convert-scaled-fp8": _convert_scaled_fp8,
    "relabel-marker": _relabel_marker,
    "rebuild-marker": _rebuild_marker,
    "rewrite-marker": _rewrite_marker,
    "drop-header-metadata": _drop_header_metadata,
    "header-entry-to-marker": _header_entry_to_marker,
    "resolve-conflict": _resolve_conflict,
    "requantize": _requantize,
    "requantize-symmetric": _requantize_symmetric,
    "dequantize-layer": _dequantize,
    "quantize-layer": _quantize_marked,
}
UNSAFE_ACTIONS = frozenset(
    {"requantize", "requantize-symmetric", "dequantize-layer", "quantize-layer"}
)
