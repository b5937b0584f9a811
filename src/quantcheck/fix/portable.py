"""`fix --profile portable`: one file that every consumer reads the same way.

Consumers read markers from different places (the runtime records in
`quantcheck.runtimes`): DiffSynth-Studio, musubi-tuner, WanVideoWrapper and stable-diffusion.cpp
(merged code; an unmerged branch read the header instead) read only `.comfy_quant` tensors,
the last at the top level only; sglang's header path reads only the header
`_quantization_metadata`; SD.Next, Forge Neo and ComfyUI read both, the header overwriting;
sglang 0.5.19 wants both identical. So, for every quantized layer, the portable profile
writes:

(a) the header entry and the tensor marker as the SAME object (the fields of both merged; a
    field the two disagree on is never guessed: the layer is left as it is and reported);
    `_quantization_metadata` gets `format_version` "1.0" as ComfyUI writes it;
(b) F16/BF16 scales (and F64 ones whose values are all F32 values) as F32;
(c) the keys readers need, explicitly: `params` keys hoisted to the top level; a rotated
    int8_tensorwise keeps `convrot: true` + `convrot_groupsize` (a missing group is reported,
    never guessed); plain int8 and unrotated NVFP4 lose a `convrot: false`; NVFP4 gets
    `full_precision_matrix_mult: true` only when sglang 0.5.19 is a target.

Where consumers want incompatible bytes it chooses and says so (`portable_choices`): (d) NVFP4
block scales of layers that are not N % 128 == 0 and K % 64 == 0 (MXFP8: K % 128) stay in
ComfyUI's padded swizzled layout (SD.Next's too); sglang has no layout that computes them
correctly, only a dequantized layer (`--target sglang --unsafe-fixes`), so nothing is re-laid;
`full_precision_matrix_mult` costs SD.Next speed and is written only for sglang 0.5.19; (e)
SD.Next's one format per file cannot be repaired by bytes. Which runtime wants what is the
data below, by runtime name: a runtime registered later under one of these names joins without
a code change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from quantcheck.diagnostics import Diagnostic
from quantcheck.fix.actions import Refused, cast_f32
from quantcheck.fix.draft import QMETA, Draft
from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS, FormatSpec
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.model.markers import _strict_equal
from quantcheck.runtimes import get_runtime, runtime_names, targets_of

PROFILES = ("default", "portable")
#: The label of portable edits in the plan (they answer no single diagnostic).
CODE = "portable"

#: NVFP4 block scales: readers of ComfyUI's padded swizzled [ceil(N,128), ceil(K/16,4)] layout
#: (SD.Next `adopt_nvfp4_layer` checks that numel), and sglang, whose validator wants exactly
#: [N, K/16] and unswizzles it: one set of bytes serves both only when N%128 == 0 and K%64 == 0.
PADDED_NVFP4 = ("comfyui", "sdnext", "forge-neo")
UNPADDED_NVFP4 = ("sglang",)
#: format -> (readers of the padded swizzled layout, block along K, K multiple for which it has
#: sglang's [N, K/block] shape too; N must be a multiple of 128). SD.Next has no MXFP8.
PADDED_LAYOUTS = {
    "nvfp4": (PADDED_NVFP4, 16, 64),
    "mxfp8": (("comfyui", "forge-neo"), 32, 128),
}
#: SD.Next `detect_comfy_quant` rejects files that mix formats across layers.
ONE_FORMAT_PER_FILE = ("sdnext",)
#: The release that refuses NVFP4 layers without full_precision_matrix_mult, and the runtimes
#: that then keep such layers on a slower dequantize path (SD.Next).
FPMM_REQUIRED = "sglang@0.5.19"
FPMM_SLOWER = ("sdnext",)
#: Scale dtypes widened to F32 (F64 only when every value is an F32 value).
WIDEN = frozenset({"F16", "BF16", "F64"})


@dataclass(frozen=True)
class Choice:
    """One thing the portable profile chose (or could not do), for the report."""

    topic: str
    chose: tuple[str, ...]
    over: tuple[str, ...]
    layers: tuple[str, ...]
    because: str
    display_only: bool = False

    def text(self) -> str:
        few = ", ".join(self.layers[:3]) + (
            f" and {len(self.layers) - 3} more" if len(self.layers) > 3 else ""
        )
        where = f" for {len(self.layers)} layer{'s' if len(self.layers) != 1 else ''} ({few})"
        if self.chose and self.over:
            head = f"chose {', '.join(self.chose)} over {', '.join(self.over)}"
        elif self.over:
            head = f"cannot serve {', '.join(self.over)}"
        elif self.chose:
            head = f"chose {', '.join(self.chose)}"
        else:
            head = "left as it is"
        tail = " (display-only: no byte-level repair)" if self.display_only else ""
        return f"{self.topic}: {head}{where if self.layers else ''} because {self.because}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "chose": list(self.chose),
            "over": list(self.over),
            "layers": list(self.layers),
            "because": self.because,
            "display_only": self.display_only,
        }


def quantized_spec(layer: Layer) -> FormatSpec | None:
    """The format of a marked layer whose weight has that format's dtype (else None: the
    default rules handle stale, unknown and mismatched markers)."""
    m, w = layer.marker, layer.weight
    if m is None or w is None or not isinstance(m.format, str):
        return None
    spec = FORMATS.get(m.format)
    return spec if spec is not None and w.dtype in spec.weight_dtypes else None


def _copy(v: Any) -> Any:
    return json.loads(json.dumps(v))


def merged_fields(layer: Layer) -> tuple[dict[str, Any] | None, str]:
    """The union of the layer's marker sources; (None, why) when two disagree on a field."""
    assert layer.marker is not None
    out: dict[str, Any] = {}
    first: dict[str, str] = {}
    for src in layer.marker.sources:
        label = f"the {src.origin} marker {src.key!r}"
        for k, v in src.fields.items():
            if k in out and not _strict_equal(out[k], v):
                return None, (
                    f"field {k!r} is {json.dumps(out[k])} in {first[k]} but {json.dumps(v)} in "
                    f"{label}; quantcheck does not guess which one the weights were written with"
                )
            out.setdefault(k, v)
            first.setdefault(k, label)
    return _copy(out), ""


def header_defaults(ck: Checkpoint) -> dict[str, dict[str, Any]]:
    """Per file: the top-level `params` of its `_quantization_metadata` (defaults for every
    header entry in stable-diffusion.cpp's unmerged PR #1829; no modelled reader applies them)."""
    out: dict[str, dict[str, Any]] = {}
    for shard in ck.shards:
        text = shard.header.metadata.get(QMETA)
        if text is None or '"params"' not in text:
            continue
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            continue
        params = doc.get("params") if isinstance(doc, dict) else None
        if isinstance(params, dict) and params:
            out[shard.name] = params
    return out


def normalize(spec: FormatSpec, fields: dict[str, Any], scope: tuple[str, ...]) -> list[str]:
    """Make the keys every reader needs explicit (item (c)); returns what changed."""
    done: list[str] = []
    params = fields.get("params")
    if isinstance(params, dict):
        hoisted = [k for k in params if k not in fields]
        for k in hoisted:
            fields[k] = _copy(params[k])
        if hoisted:
            done.append(f"copy {', '.join(hoisted)} from params to the top level")
    cr = fields.get("convrot")
    if spec.name == "int8_tensorwise" and cr is False and "convrot_groupsize" not in fields:
        del fields["convrot"]
        done.append("drop convrot: false (plain INT8)")
    if spec.name == "nvfp4":
        if cr is False:
            del fields["convrot"]
            done.append("drop convrot: false (NVFP4 has no rotation)")
        if FPMM_REQUIRED in scope and fields.get("full_precision_matrix_mult") is not True:
            fields["full_precision_matrix_mult"] = True
            done.append(f"set full_precision_matrix_mult: true ({FPMM_REQUIRED} is a target)")
    return done


def layer_problem(spec: FormatSpec, fields: dict[str, Any]) -> tuple[str, str] | None:
    """(topic, why) when a layer's marker cannot be made to mean one thing to every reader."""
    cr = fields.get("convrot")
    if spec.name == "int8_tensorwise":
        if cr is True and "convrot_groupsize" not in fields:
            return "int8-rotation-group", (
                "the layer is rotated but its marker has no convrot_groupsize: ComfyUI "
                "rotates with 256, sglang and musubi-tuner refuse it, and the tensors do not "
                "record the group the weights were rotated with"
            )
        if cr is not True and "convrot_groupsize" in fields:
            return "int8-rotation-ambiguous", (
                "the marker names convrot_groupsize without convrot: true: ComfyUI reads the "
                "weights as not rotated, readers that take the group as rotation read them "
                "as rotated, and the tensors do not record which is right"
            )
    if spec.name == "nvfp4" and cr is not None and cr is not False:
        return "nvfp4-rotated", (
            "the marker says the NVFP4 weights are rotated (convrot), a variant the format "
            "does not define: ComfyUI ignores the key, sglang >= 0.5.20 and SD.Next refuse "
            "it, and dropping it would compute with rotated weights; requantize from the "
            "original weights"
        )
    return None


def _synced(layer: Layer, fields: dict[str, Any]) -> tuple[bool, bool]:
    """(the tensor marker holds `fields`, exactly one header entry does: in the weight's file,
    as readers that open one file at a time find it)."""
    assert layer.marker is not None and layer.weight is not None
    tensor = [s for s in layer.marker.sources if s.origin == "tensor"]
    header = [s for s in layer.marker.sources if s.origin == "header"]
    return (
        len(tensor) == 1 and _strict_equal(tensor[0].fields, fields),
        len(header) == 1
        and header[0].key == layer.prefix
        and header[0].file == layer.weight.file
        and _strict_equal(header[0].fields, fields),
    )


def apply_portable(
    draft: Draft, target: str, locked: set[str], refused: dict[str, tuple[str, str]]
) -> None:
    """One round of portable edits on every quantized layer not `locked` by a structural fix
    this round; what cannot be made portable goes to `refused` (layer or tensor -> topic, why)."""
    scope = targets_of(target)
    for prefix, layer in draft.ck.layers.items():
        spec = quantized_spec(layer)
        if spec is None or prefix in locked:
            continue
        _scales_to_f32(draft, layer, spec, refused)
        if prefix in draft.markers:
            fields = draft.markers[prefix]
            if fields is None:
                continue  # a fix removed the marker this round
            fields = _copy(fields)
            edited = True
        else:
            got, why = merged_fields(layer)
            if got is None:
                refused[prefix] = ("marker-conflict", why)
                continue
            fields, edited = got, False
        done = normalize(spec, fields, scope)
        problem = layer_problem(spec, fields)
        if problem is not None:
            refused[prefix] = problem
        if edited:
            draft.set_marker(prefix, fields)  # a fix rewrote it: the sync writes both copies
            extra = f" ({'; '.join(done)})" if done else ""
            draft.log(
                CODE,
                prefix,
                f"write the fixed marker of {prefix} as its header entry too{extra}",
                "safe",
            )
            continue
        tensor_ok, header_ok = _synced(layer, fields)
        if tensor_ok and header_ok:
            continue
        if not tensor_ok:
            draft.set_marker(prefix, fields)
        else:
            draft.set_header_entry(prefix, fields)
        what = (
            "write the marker as the .comfy_quant tensor and the header entry"
            if not tensor_ok and not header_ok
            else "write the marker as the .comfy_quant tensor"
            if not tensor_ok
            else "write the marker as the header entry"
        )
        extra = f" ({'; '.join(done)})" if done else ""
        draft.log(CODE, prefix, f"{what} of {prefix}: {json.dumps(fields)[:160]}{extra}", "safe")
    _format_version(draft)


def sync_markers(draft: Draft, d: Diagnostic, p: dict[str, Any], target: str) -> str:
    """Fix action "sync-markers" (any profile): write the layer's merged marker both as its
    `.comfy_quant` tensor and as its header entry, for rules of readers that look in only one
    of the two places (a header-only or a marker-only consumer)."""
    prefix = d.layer or ""
    layer = draft.ck.layers.get(prefix)
    if layer is None or layer.marker is None or layer.weight is None:
        raise Refused(f"{prefix} has no marker and weight to write")
    fields, why = merged_fields(layer)
    if fields is None:
        raise Refused(why)
    if not _synced(layer, fields)[0]:
        draft.set_marker(prefix, fields)
    draft.set_header_entry(prefix, fields)
    return f"write the marker of {prefix} as its .comfy_quant tensor and header entry"


#: Fix actions this module adds to `quantcheck.fix.actions.ACTIONS` (looked up by the planner).
PORTABLE_ACTIONS = {"sync-markers": sync_markers}


def _scales_to_f32(
    draft: Draft, layer: Layer, spec: FormatSpec, refused: dict[str, tuple[str, str]]
) -> None:
    """Item (b): scales every reader accepts as F32 are widened to F32 (exact casts only)."""
    for c in spec.companions:
        wanted = [s for s in (c.comfyui_dtypes, c.sglang_dtypes) if s is not None]
        if "scale" not in c.suffix or not wanted or not all("F32" in s for s in wanted):
            continue
        t = draft.get(f"{layer.prefix}.{c.suffix}")
        if t is None or t.dtype not in WIDEN or t.name in draft.touched:
            continue
        try:
            text = cast_f32(draft, t)
        except Refused as exc:
            refused[t.name] = ("scale-not-f32", str(exc))
            continue
        draft.log(CODE, t.name, f"{text}: every reader takes F32 scales", "safe", (), layer.prefix)


def _format_version(draft: Draft) -> None:
    """A `_quantization_metadata` without `format_version` gets "1.0" (what ComfyUI writes;
    sglang's header path needs it)."""
    for f in draft.files:
        text = f.metadata.get(QMETA)
        try:
            doc = json.loads(text) if text is not None else None
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("layers"), dict):
            continue
        if "format_version" in doc:
            continue
        f.metadata[QMETA] = json.dumps({"format_version": "1.0", **doc})
        draft.log(CODE, f.name, f'add "format_version": "1.0" to {QMETA} of {f.name}', "safe")


# ----------------------------------------------------------------------------- choices


def _names(scope: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(k.partition("@")[0] for k in scope))


def portable_choices(
    ck: Checkpoint, target: str, refused: dict[str, tuple[str, str]]
) -> list[Choice]:
    """What the portable output chose between targets, and what it could not do (items d, e)."""
    scope = targets_of(target)
    names = [n for n in _names(scope) if n in runtime_names()]
    out: list[Choice] = []
    grouped: dict[tuple[str, str], list[str]] = {}
    for where, reason in refused.items():
        grouped.setdefault(reason, []).append(where)
    for (topic, why), layers in grouped.items():
        out.append(Choice(topic, (), (), tuple(layers), why, True))
    specs = {p: s for p, la in ck.layers.items() if (s := quantized_spec(la)) is not None}
    nvfp4 = {p: ck.layers[p] for p, s in specs.items() if s.name == "nvfp4"}
    sg = [n for n in names if n in UNPADDED_NVFP4]
    for fmt, (readers, block, k_mult) in PADDED_LAYOUTS.items():
        padded = [n for n in names if n in readers]
        odd = [p for p, s in specs.items() if s.name == fmt and not _aligned(ck.layers[p])]
        if not (odd and sg and padded):
            continue
        out.append(
            Choice(
                f"{fmt}-scale-layout",
                tuple(padded),
                tuple(sg),
                tuple(odd),
                f"these layers are not N % 128 == 0 and K % {k_mult} == 0, so ComfyUI's "
                f"padded swizzled block scales (what {', '.join(padded)} read) cannot have "
                f"sglang's exact [N, K/{block}] shape, and no re-layout computes correctly on "
                "sglang (it unswizzles the scales); the padded layout is kept. For sglang, "
                "dequantize them: fix --target sglang --unsafe-fixes",
                True,
            )
        )
    fpmm_slow = [n for n in names if n in FPMM_SLOWER]
    if nvfp4 and FPMM_REQUIRED in scope:
        out.append(
            Choice(
                "nvfp4-full-precision",
                (FPMM_REQUIRED,),
                tuple(fpmm_slow),
                tuple(nvfp4),
                f"{FPMM_REQUIRED} refuses NVFP4 layers without full_precision_matrix_mult: true; "
                "the key makes ComfyUI and SD.Next compute these layers on the slower "
                "dequantize path",
            )
        )
    elif nvfp4 and any(n == "sglang" for n in names):
        missing = [
            p
            for p, la in nvfp4.items()
            if la.marker and la.marker.get("full_precision_matrix_mult") is not True
        ]
        if missing:
            out.append(
                Choice(
                    "nvfp4-full-precision",
                    tuple(f"{n}@{get_runtime(n).newest.name}" for n in names),
                    (FPMM_REQUIRED,),
                    tuple(missing),
                    "full_precision_matrix_mult was not set: it keeps these layers on the "
                    f"slower dequantize path and only {FPMM_REQUIRED} (not a target) needs it; "
                    f"add --target {FPMM_REQUIRED} to set it",
                )
            )
    out += _header_params(ck, specs)
    formats = sorted({s.name for s in specs.values()})
    one = [n for n in names if n in ONE_FORMAT_PER_FILE]
    if len(formats) > 1 and one:
        out.append(
            Choice(
                "one-format-per-file",
                tuple(n for n in names if n not in one),
                tuple(one),
                (),
                f"the file mixes {', '.join(formats)} and SD.Next loads one format per file "
                '("mixes formats across layers"; it then loads the base model instead); '
                "no byte-level repair changes that: requantize the layers to one format or "
                "split the file",
                True,
            )
        )
    floats = [f for f in formats if "float8" in f]
    if floats and len(formats) > 1 and "sglang" in names and _declared(ck):
        out.append(
            Choice(
                "sglang-header-path",
                tuple(n for n in names if n != "sglang"),
                ("sglang",),
                (),
                f"the header now declares every layer, and sglang's header path "
                "(get_quant_config_from_safetensors_metadata: --transformer-weights-path "
                f"overrides, text encoders) reads a header naming any float8 format "
                f"({', '.join(floats)}) as one whole-model FP8 config, although the file also "
                f"holds {', '.join(f for f in formats if f not in floats)}; header-only readers "
                "need the declarations. sglang's marker path is unaffected",
            )
        )
    return out


def _header_params(ck: Checkpoint, specs: dict[str, FormatSpec]) -> list[Choice]:
    """A note on header top-level `params` that would change a layer if a reader applied them."""
    defaults = header_defaults(ck)
    hit: dict[str, None] = {}
    for p in specs:
        layer = ck.layers[p]
        params = defaults.get(layer.weight.file, {}) if layer.weight is not None else {}
        if layer.marker is not None and any(k not in layer.marker.fields for k in params):
            hit[p] = None
    if not hit:
        return []
    keys = sorted({k for params in defaults.values() for k in params})
    return [
        Choice(
            "header-params",
            (),
            (),
            tuple(hit),
            f"the header's top-level params ({', '.join(keys)}) are kept but not written into "
            "these layers' markers: no modelled reader applies them (stable-diffusion.cpp's "
            "unmerged PR #1829 read them as defaults); if the weights were written with them, "
            "add them to each marker",
            True,
        )
    ]


def _declared(ck: Checkpoint) -> bool:
    """Whether any file's header `_quantization_metadata` declares layers."""
    return any(s.origin == "header" for m in ck.markers.values() for s in m.sources)


def _aligned(layer: Layer) -> bool:
    """Whether the padded swizzled block scale has sglang's exact [N, K/block] shape."""
    spec = quantized_spec(layer)
    dims = derive_dims(spec, layer) if spec else None
    k_mult = PADDED_LAYOUTS[spec.name][2] if spec and spec.name in PADDED_LAYOUTS else 1
    return dims is not None and dims.N % 128 == 0 and dims.K % k_mult == 0
