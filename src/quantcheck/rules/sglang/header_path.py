"""sglang's header path: which of its two readers takes a checkpoint, per release.

sglang reads a ComfyUI checkpoint through one of two paths (read in the PyPI wheels
0.5.18-0.5.23, `sglang/multimodal_gen/runtime/utils/quantization_utils.py`):

* the header path, `get_quant_config_from_safetensors_metadata(file)`: `__metadata__`
  `_quantization_metadata` (or `quantization_config` when that is absent or not JSON), parsed
  as JSON. 0.5.23 first asks `_get_serialized_quant_config`: a layer format (or a
  `quant_configs` key) "rowwise-float8_e4m3fn" builds `RowwiseFp8Config` or raises
  `RowwiseFp8Error` (not caught). Then, with `format_version` and `layers` but no
  `quant_method`, `handle_fp8_metadata_format` sets `quant_method="fp8"` (activation
  "dynamic") when ANY layer's format contains "float8": one whole-model `Fp8Config` whatever
  the other layers are. Any exception while building the config returns None silently.
  0.5.18 (transformer loader) then tries `_build_nvfp4_config_from_safetensors_files`
  (ModelOpt NVFP4 from header "nvfp4" layers and U8 + F8_E4M3 tensor families);
* the marker path (0.5.19+), `inspect_comfy_quant_markers` + `resolve_comfy_checkpoint_
  quantization`: what the other sglang rules model.

Order: the text-encoder loader (`_get_encoder_quant_config`, 0.5.19-0.5.23) calls the header
path for a weights file that overrides the model's, then quanto INT8, then the marker
inspector; the `--transformer-weights-path` loader (`transformer_load_utils`) reads only the
header path and the NVFP4 inference; the MiniMax-H3 and ComfyUI single-file loaders read
markers first. quantcheck's sglang verdict follows the header-first order: a file the header
path takes never reaches the marker rules. Standard library only.
"""

from __future__ import annotations

import json

from quantcheck._record import record
from quantcheck.formats.table import ROWWISE_FP8
from quantcheck.io.json_depth import MAX_DEPTH, too_deep
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import kinds_of

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.io.header import TensorInfo
    from quantcheck.model.checkpoint import Checkpoint

#: The first release with the rowwise FP8 header path; the only one without a marker inspector.
ROWWISE_SINCE = (0, 5, 23)
NO_INSPECTOR = (0, 5, 18)
READER = "get_quant_config_from_safetensors_metadata"

#: Codes that stay on sglang when its header path takes the file: the header-path rules, and
#: (by family) the container and shard rules (the files must still be readable and whole).
HEADER_CODES = frozenset(
    r.code
    for r in (
        R.QC616,
        R.QC617,
        R.QC618,
        R.QC619,
        R.QC620,
        R.QC621,
        R.QC622,
        R.QC623,
        R.QC624,
        R.QC630,
    )
)


def short(value: Any, limit: int = 80) -> str:
    """`repr(value)` as sglang prints it, cut to `limit` characters for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def version(release: str) -> tuple[int, ...]:
    hit = _VERSIONS.get(release)
    if hit is None:
        hit = tuple(int(x) for x in release.split(".") if x.isdigit())
        if len(_VERSIONS) < 256:
            _VERSIONS[release] = hit
    return hit


#: `version` by release name (a handful of modelled releases, asked per checkpoint)
_VERSIONS: dict[str, tuple[int, ...]] = {}


@record
class HeaderDoc:
    """The header declaration of one shard as sglang's header path parses it."""

    file: str
    key: str  # "_quantization_metadata" or "quantization_config"
    doc: Any  # the parsed JSON (any type), None when absent or not JSON
    bad_json: bool = False  # `_quantization_metadata` present but not JSON


@record
class Route:
    """What the header path builds for one file at one release."""

    file: str
    config: str  # "RowwiseFp8Config", "Fp8Config", "ModelOptFp4Config", "quant_method X",
    # or the exception it raises ("TypeError")
    why: str
    kind: str  # "rowwise", "fp8", "nvfp4", "declared", "error"


def header_docs(ck: Checkpoint) -> list[HeaderDoc]:
    """Per shard, the declaration `get_quant_config_from_safetensors_metadata` reads."""
    out = []
    for shard in ck.shards:
        meta = shard.header.metadata
        raw = meta.get("_quantization_metadata")
        doc: Any = None
        bad = False
        key = "_quantization_metadata"
        if raw:
            try:
                doc = json.loads(raw)
            except (ValueError, RecursionError):
                bad = True
        if doc is None:
            raw2 = meta.get("quantization_config")
            if raw2:
                key = "quantization_config"
                try:
                    doc = json.loads(raw2)
                except (ValueError, RecursionError):
                    doc = None
        if doc is not None and too_deep(doc, MAX_DEPTH + 2):
            doc = None  # hostile nesting: not modelled (every later walk must stay shallow)
        out.append(HeaderDoc(shard.name, key, doc, bad))
    return out


def declared_formats(doc: dict[str, Any]) -> set[str]:
    """0.5.23 `_get_serialized_quant_config`: string layer formats (an entry may be the format
    itself) plus the keys of `quant_configs`."""
    out: set[str] = set()
    layers = doc.get("layers", {})
    if isinstance(layers, dict):
        for entry in layers.values():
            fmt = entry.get("format") if isinstance(entry, dict) else entry
            if isinstance(fmt, str):
                out.add(fmt)
    qc = doc.get("quant_configs", {})
    if isinstance(qc, dict):
        out.update(k for k in qc if isinstance(k, str))
    return out


def float8_layers(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """(layer, format) of the layers whose format contains "float8" (handle_fp8_metadata_
    format's test), when the doc has `format_version` and `layers` and no `quant_method`."""
    if "quant_method" in doc or "format_version" not in doc or "layers" not in doc:
        return []
    layers = doc.get("layers")
    if not isinstance(layers, dict):
        return []
    out = []
    for name, v in layers.items():
        fmt = v.get("format", "") if isinstance(v, dict) else None
        if isinstance(fmt, str | list | dict) and "float8" in fmt:  # Python's `in`, as sglang
            out.append((name, fmt))
    return out


def fp8_scan_error(doc: dict[str, Any]) -> tuple[str, Any] | None:
    """(layer, format) where handle_fp8_metadata_format raises TypeError: its
    `any("float8" in v.get("format", "") ...)` meets a format that is a number, true/false or
    null before any float8 layer (the exception is not caught: the load stops)."""
    if "quant_method" in doc or "format_version" not in doc or "layers" not in doc:
        return None
    layers = doc.get("layers")
    if not isinstance(layers, dict):
        return None
    for name, v in layers.items():
        if not isinstance(v, dict):
            continue
        fmt = v.get("format", "")
        if fmt is None or isinstance(fmt, bool | int | float):
            return name, fmt
        if isinstance(fmt, str | list | dict) and "float8" in fmt:
            return None  # any() stops at the first float8 layer
    return None


def route(hd: HeaderDoc, release: str) -> Route | None:
    """What `get_quant_config_from_safetensors_metadata` builds for this shard at `release`
    (None: it returns None and the loader goes on)."""
    doc = hd.doc
    if not doc or not isinstance(doc, dict):
        return None
    if version(release) >= ROWWISE_SINCE and ROWWISE_FP8 in declared_formats(doc):
        return Route(
            hd.file,
            "RowwiseFp8Config",
            f'the header declares "{ROWWISE_FP8}" layers (_get_serialized_quant_config)',
            "rowwise",
        )
    bad = fp8_scan_error(doc)
    if bad is not None:
        return Route(
            hd.file,
            "TypeError",
            f"layer {short(bad[0])} has format {json.dumps(bad[1])}: handle_fp8_metadata_format "
            "tests '\"float8\" in format' and raises TypeError, which "
            "get_quant_config_from_safetensors_metadata does not catch",
            "error",
        )
    f8 = float8_layers(doc)
    if f8:
        name, fmt = f8[0]
        return Route(
            hd.file,
            "Fp8Config",
            f"{hd.key} has format_version and layers but no quant_method, and layer "
            f"{short(name)} has format {short(fmt)}, which contains 'float8' "
            "(handle_fp8_metadata_format)",
            "fp8",
        )
    method = doc.get("quant_method")
    if method:
        return Route(
            hd.file,
            f"quant_method {short(method)}",
            f"{hd.key} declares quant_method {short(method)} (a config failing to build returns "
            "None silently)",
            "declared",
        )
    return None


def nvfp4_route(ck: Checkpoint, docs: list[HeaderDoc]) -> Route | None:
    """0.5.18's `_build_nvfp4_config_from_safetensors_files`: header "nvfp4" layers (with
    format_version) or U8 weights with 2-D F8_E4M3 `weight_scale` tensors."""
    layers = nvfp4_layers(ck, docs)
    if not layers:
        return None
    first = layers[0]
    return Route(
        first[0],
        "ModelOptFp4Config",
        f"the header or the tensors name NVFP4 layers (e.g. {short(first[1])})",
        "nvfp4",
    )


def nvfp4_layers(ck: Checkpoint, docs: list[HeaderDoc]) -> list[tuple[str, str]]:
    """(file, layer) the NVFP4 builder counts as quantized, per file in order, sorted by name
    within a file (the order it infers the group size in)."""
    by_file: dict[str, set[str]] = {hd.file: set() for hd in docs}
    for hd in docs:
        doc = hd.doc if hd.key == "_quantization_metadata" else None
        if isinstance(doc, dict) and "format_version" in doc and "layers" in doc:
            layers = doc.get("layers")
            if isinstance(layers, dict):
                by_file[hd.file].update(
                    n
                    for n, v in layers.items()
                    if isinstance(v, dict) and v.get("format") == "nvfp4"
                )
    for prefix, t in _f8_weight_scales(ck):
        if len(t.shape) < 2 or t.file not in by_file:
            continue
        w = ck.tensors.get(prefix + ".weight")
        if w is not None and w.dtype == "U8":
            by_file[t.file].add(prefix)
    return [(f, p) for f, names in by_file.items() for p in sorted(names)]


def _f8_weight_scales(ck: Checkpoint) -> list[tuple[str, TensorInfo]]:
    """(prefix, tensor) for the tensors named `<prefix>.weight_scale` whose dtype names
    F8_E4M3, where a `<prefix>.weight` may exist. `ck.layers` groups every such name with a
    non-empty prefix under that prefix (`weight_scale` and `weight` are layer suffixes), so
    those are the layers with a weight, looked at once per kind (`layer_kinds`: the layers of
    a kind share their tensors' dtypes); the names grouped into no layer (`ck.loose`:
    ".weight_scale") are matched by name."""
    out = [
        (la.prefix, la.tensors["weight_scale"])
        for k in kinds_of(ck).kinds
        if (t := k.first.tensors.get("weight_scale")) is not None and "F8_E4M3" in t.dtype
        for la in k.layers
    ]
    for name in ck.loose:
        t = ck.tensors[name]
        if name.endswith(".weight_scale") and "F8_E4M3" in t.dtype:
            out.append((name[: -len(".weight_scale")], t))
    return out


def nvfp4_group_size(weight_shape: tuple[int, ...], scale_shape: tuple[int, ...]) -> int | None:
    """`_infer_nvfp4_group_size_from_shapes`: 2 * weight columns // scale groups."""
    if len(weight_shape) < 2:
        return None
    size = int(weight_shape[1]) * 2
    if size <= 0:
        return None
    if len(scale_shape) >= 2:
        cands = [int(scale_shape[-1])]
    elif len(scale_shape) == 1:
        cands = ([1] if int(scale_shape[0]) == int(weight_shape[0]) else []) + [int(scale_shape[0])]
    else:
        cands = [1]
    for g in cands:
        if g > 0 and size % g == 0:
            return size // g
    return None


@record
class SglangPath:
    """Which path sglang reads a checkpoint through at one release, and why."""

    release: str
    path: str  # "header", "markers" or "none"
    why: str
    route: Route | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "path_reason": self.why}
        if self.route is not None:
            out["path_config"] = self.route.config
        return out


def header_route(docs: list[HeaderDoc], release: str) -> Route | None:
    """The first shard whose header path gives a config (the loaders stop there)."""
    for hd in docs:
        r = route(hd, release)
        if r is not None:
            return r
    return None


def sglang_path(ck: Checkpoint, release: str, docs: list[HeaderDoc] | None = None) -> SglangPath:
    """The path sglang `release` reads `ck` through (module doc: the header-first order)."""
    return sglang_paths(ck, (release,), docs)[release]


def sglang_paths(
    ck: Checkpoint, releases: tuple[str, ...], docs: list[HeaderDoc] | None = None
) -> dict[str, SglangPath]:
    """`sglang_path` for each of `releases`; what does not depend on the release (the NVFP4
    inference, whether layers are marked) is worked out once."""
    docs = header_docs(ck) if docs is None else docs
    memo: dict[str, Any] = {}
    # `route` returns None for a shard without a JSON object declaration, at every release
    routed = any(hd.doc and isinstance(hd.doc, dict) for hd in docs)
    if routed:
        return {rel: _path_at(ck, rel, docs, memo, routed) for rel in releases}
    # no header route: the NVFP4 inference (releases without a marker inspector) and whether
    # layers are marked decide; without an NVFP4 route, the paths are shared `_plain` ones
    if _without_inspector(releases):
        memo["nvfp4"] = nvfp4_route(ck, docs)
        if memo["nvfp4"] is not None:
            return {rel: _path_at(ck, rel, docs, memo, routed) for rel in releases}
    memo["nvfp4"] = None
    memo["marked"] = _marked(ck)
    key = (releases, memo["marked"])
    hit = _UNROUTED.get(key)
    if hit is None:
        hit = {rel: _path_at(ck, rel, docs, memo, routed) for rel in releases}
        if len(_UNROUTED) < 256:
            _UNROUTED[key] = hit
    return dict(hit)


#: `sglang_paths` of a checkpoint without a header or NVFP4 route, by (releases, marked)
_UNROUTED: dict[tuple[tuple[str, ...], bool], dict[str, SglangPath]] = {}


def _without_inspector(releases: tuple[str, ...]) -> bool:
    """Whether one of `releases` has no marker inspector (reads NVFP4 from the tensors)."""
    hit = _WITHOUT_INSPECTOR.get(releases)
    if hit is None:
        hit = any(version(rel) <= NO_INSPECTOR for rel in releases)
        if len(_WITHOUT_INSPECTOR) < 256:
            _WITHOUT_INSPECTOR[releases] = hit
    return hit


#: `_without_inspector` by releases (asked per checkpoint, for the same few release lists)
_WITHOUT_INSPECTOR: dict[tuple[str, ...], bool] = {}


def _marked(ck: Checkpoint) -> bool:
    """Whether sglang's marker inspector finds quantized layers: a marked layer with a weight,
    or `quant_format` mxfp8."""
    return any(
        la.marker is not None and "weight" in la.tensors for la in ck.layers.values()
    ) or any(v.lower() == "mxfp8" for v in ck.quant_formats.values())


def _path_at(
    ck: Checkpoint, release: str, docs: list[HeaderDoc], memo: dict[str, Any], routed: bool
) -> SglangPath:
    r = header_route(docs, release) if routed else None
    inspector = version(release) > NO_INSPECTOR
    if r is None and not inspector:
        if "nvfp4" not in memo:
            memo["nvfp4"] = nvfp4_route(ck, docs)
        r = memo["nvfp4"]
    if r is not None:
        reader = "_build_nvfp4_config_from_safetensors_files" if r.kind == "nvfp4" else READER
        return SglangPath(release, "header", f"{reader} -> {r.config}: {r.why}", r)
    if not inspector:
        return _plain(release, "none", "no marker inspector, and the header path finds nothing")
    if "marked" not in memo:
        memo["marked"] = _marked(ck)
    if memo["marked"]:
        return _plain(
            release,
            "markers",
            f"{READER} returns None, so the text-encoder loader goes on to "
            "inspect_comfy_quant_markers (the --transformer-weights-path loader never reads "
            "the markers: see loaders)",
        )
    return _plain(release, "none", "no header declaration and no comfy_quant markers")


def _plain(release: str, path: str, why: str) -> SglangPath:
    """`SglangPath(release, path, why)` without a route: one shared object per release and
    reason (every checkpoint without a header declaration asks for the same few)."""
    key = (release, path, why)
    hit = _PLAIN.get(key)
    if hit is None:
        hit = SglangPath(release, path, why)
        if len(_PLAIN) < 256:
            _PLAIN[key] = hit
    return hit


#: `_plain` paths by (release, path, reason)
_PLAIN: dict[tuple[str, str, str], SglangPath] = {}


__all__ = [
    "HEADER_CODES",
    "HeaderDoc",
    "Route",
    "SglangPath",
    "header_docs",
    "header_route",
    "nvfp4_group_size",
    "nvfp4_layers",
    "route",
    "sglang_path",
    "sglang_paths",
    "short",
]
