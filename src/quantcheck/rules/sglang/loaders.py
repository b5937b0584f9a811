"""sglang's verdict per loader: which of its loaders reads the file decides what happens.

sglang reads a ComfyUI checkpoint through one of four loaders (read in the PyPI wheels
0.5.18-0.5.23, `sglang/multimodal_gen/runtime/loader/`):

* `transformer-weights-path`: `sglang generate --transformer-weights-path FILE` for any DiT but
  MiniMax-H3, `transformer_load_utils._resolve_quant_config` ->
  `_resolve_weight_override_quantization` (0.5.19+): the header path
  (`get_quant_config_from_safetensors_metadata`) and the header declarations only, then the
  NVFP4 inference (`build_nvfp4_config_from_safetensors_list`). The comfy_quant markers are
  never read: a file with quantized tensors (`.weight_scale`, `.input_scale`, `.comfy_quant`,
  or an F8_E4M3 / I8 / U8 weight) or a header declaration, and no config from either, raises
  "Replacement checkpoint contains quantized tensors but no supported native quantization
  declaration". 0.5.18: the header path, then the NVFP4 inference, else unquantized.
* `minimax-h3`: MiniMax-H3 with `--transformer-weights-path` (0.5.19+):
  `inspect_minimax_h3_safetensors` + `resolve_minimax_h3_checkpoint_quantization`, never the
  header path while the file has markers (without markers: as `transformer-weights-path`).
* `comfyui-mode`: the `--comfyui-mode` single-file loader (0.5.21+,
  `comfyui_checkpoints/spec.py` `load_comfyui_transformer`) reads markers only for specs that
  have them: MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (`quant_markers`, which
  resolves without files: NVFP4 fails), both from 0.5.22. Every other spec (Flux, Qwen-Image,
  Z-Image; every spec in 0.5.21) loads the file unquantized: the weight loader casts each
  stored weight to the parameter dtype (F8 weights dequantized with their scale), a packed
  weight does not fit its parameter.
* `text-encoder`: `_get_encoder_quant_config` (0.5.19+): the header path, quanto INT8, then
  the marker inspector: the order of quantcheck's sglang rules (`header_path.py`).

Each loader's verdict is `{"status", "reason"}`, its status counted from the findings that
loader reads (`verdicts`): the findings of QC631-QC637 name their loader (`data["loaders"]`),
and so do marker findings the header path hides from the other loaders; the other findings
count for the loaders that read the file the way quantcheck's sglang rules model
(`"rules"`: header path, then markers) or, without the header-path codes, for the loaders
that read the markers first (`"markers"`). A loader that fails therefore always has a
finding that says why. Loaders a release does not have are left out. The target's status is
the loader the model family picks (`LOADER_BY_FAMILY` in `runtimes/sglang_releases.py`), else
the worst (`chosen_loader`). Standard library only.
"""

from __future__ import annotations

import json

from quantcheck.diagnostics import Diagnostic
from quantcheck.formats.table import FORMATS, HEADER_FORMATS
from quantcheck.rules import codes as R
from quantcheck.rules.levels import Effect
from quantcheck.rules.sglang.header_path import (
    HEADER_CODES,
    NO_INSPECTOR,
    READER,
    HeaderDoc,
    SglangPath,
    nvfp4_group_size,
    nvfp4_layers,
    route,
    version,
)
from quantcheck.runtimes.sglang_releases import LOADER_BY_FAMILY

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.checkpoint import Checkpoint

OVERRIDE = "transformer-weights-path"
H3 = "minimax-h3"
COMFYUI = "comfyui-mode"
ENCODER = "text-encoder"
LOADERS = (OVERRIDE, H3, COMFYUI, ENCODER)
#: the loaders that read the comfy_quant markers whatever the header says
MARKER_READERS = (H3, COMFYUI)
#: first release with the --comfyui-mode loader, and with specs that read markers
COMFYUI_SINCE = (0, 5, 21)
SPEC_MARKERS_SINCE = (0, 5, 22)
REFUSAL = (
    "Replacement checkpoint contains quantized tensors but no supported native quantization "
    "declaration"
)
#: the loaders' own codes (`rules/sglang/catalog.py`): the only ones a loader of mode "own"
#: counts
LOADER_CODES = frozenset(
    r.code for r in (R.QC631, R.QC632, R.QC633, R.QC634, R.QC635, R.QC636, R.QC637, R.QC638)
)
#: container and shard codes: every loader reads the same bytes (a truncated file or a missing
#: shard stops each of them)
WHOLE_FILE = ("QC1", "QC5")
_RANK = {"ok": 0, "degraded": 1, "fails": 2}


def worst(statuses: list[str]) -> str:
    """The worst of ok / degraded / fails ("ok" for none)."""
    return max(statuses, key=_RANK.__getitem__, default="ok")


def chosen_loader(family: str | None, verdicts: dict[str, dict[str, Any]]) -> str | None:
    """The loader whose verdict is the target's: the one sglang uses for `family` (the model
    family, None while it is not known; `LOADER_BY_FAMILY`), else the worst (the first in
    `LOADERS` order among equals). None when there are no verdicts."""
    if family is not None:
        hit = LOADER_BY_FAMILY.get(family.lower())
        if hit is not None and hit in verdicts:
            return hit
    return max(verdicts, key=lambda n: _RANK[verdicts[n]["status"]], default=None)


def _spec(mode: str, reason: str) -> dict[str, str]:
    """A loader's reading of the file: which findings it counts (module doc) and why."""
    return {"mode": mode, "reason": reason}


# --- verdicts from findings ----------------------------------------------------------------


def verdicts(
    diags: list[Diagnostic], key: str, specs: dict[str, dict[str, str]]
) -> dict[str, dict[str, Any]]:
    """Each loader's `{"status", "reason"}` at target key `key`: the worst effect of the
    findings it reads (module doc), with how many fail and degrade it."""
    fails = dict.fromkeys(specs, 0)
    degraded = dict.fromkeys(specs, 0)
    #: per loader, the codes of the findings that name it, by effect (named after its reason)
    codes: dict[str, dict[Effect, list[str]]] = {n: {} for n in specs}
    seen: dict[tuple[str, int], Effect] = {}
    for d in diags:
        ident = (d.code, id(d.effects))
        eff = seen.get(ident)
        if eff is None:
            eff = seen[ident] = d.effect_at(key)
        if eff is Effect.NONE:
            continue
        tags = d.data.get("loaders")
        for name, spec in specs.items():
            mode = spec["mode"]
            if tags is not None:
                counts = name in tags and (mode != "own" or d.code in LOADER_CODES)
            else:
                counts = (
                    mode == "rules"
                    or (mode == "markers" and d.code not in HEADER_CODES)
                    or d.code.startswith(WHOLE_FILE)
                )
            if counts:
                if eff is Effect.FAILS:
                    fails[name] += 1
                else:
                    degraded[name] += 1
                own = codes[name].setdefault(eff, [])
                if tags is not None and d.code not in own:
                    own.append(d.code)  # a finding about this loader: named after its reason
    out = {}
    for name, spec in specs.items():
        status = "fails" if fails[name] else "degraded" if degraded[name] else "ok"
        decide = codes[name].get(Effect.FAILS if fails[name] else Effect.DEGRADED, [])
        out[name] = {
            "status": status,
            "reason": spec["reason"] + (f" ({', '.join(sorted(decide))})" if decide else ""),
            "errors": fails[name],
            "degraded": degraded[name],
        }
    return out


# --- which findings each loader reads, per release ----------------------------------------


def loaders_at(
    ck: Checkpoint, release: str, docs: list[HeaderDoc], path: SglangPath
) -> dict[str, dict[str, str]]:
    """Each loader's reading of `ck` at `release` (`_spec`); `path` is the header-first reading
    of the file (what the text-encoder loader does)."""
    v = version(release)
    if v <= NO_INSPECTOR:
        why = (
            "0.5.18 has no marker inspector: the transformer loader reads the header path, "
            "then the NVFP4 inference (_resolve_quant_config)"
        )
        return {OVERRIDE: _spec("rules", why)}  # MiniMax-H3's own inspection: 0.5.19+
    kind, override = override_reading(ck, docs, release)
    marked = _marked_layers(ck)
    out = {OVERRIDE: _spec("rules" if kind == "rules" else "own", override)}
    if marked:
        out[H3] = _spec(
            "markers",
            "inspect_minimax_h3_safetensors + resolve_minimax_h3_checkpoint_quantization: "
            "the markers decide (the header path is not asked)",
        )
    else:
        out[H3] = _spec(
            out[OVERRIDE]["mode"], "no comfy_quant markers: as --transformer-weights-path"
        )
    if v >= COMFYUI_SINCE:
        out[COMFYUI] = _comfyui_reading(v, marked)
    out[ENCODER] = _spec(
        "rules",
        "_get_encoder_quant_config: header path, quanto INT8, then the markers (" + path.why + ")",
    )
    return out


def _marked_layers(ck: Checkpoint) -> dict[str, Any]:
    """{prefix: marker format} of the layers the marker inspector returns (a marker and a
    weight), or every F8/I8/U8 weight as mxfp8 under `quant_format` mxfp8."""
    out: dict[str, Any] = {
        la.prefix: la.marker.format
        for la in ck.layers.values()
        if la.marker is not None and "weight" in la.tensors
    }
    if {v.lower() for v in ck.quant_formats.values()} == {"mxfp8"}:
        for la in ck.layers.values():
            w = la.weight
            if w is not None and w.dtype in ("F8_E4M3", "I8", "U8"):
                out.setdefault(la.prefix, "mxfp8")
    return out


def _comfyui_reading(v: tuple[int, ...], marked: dict[str, Any]) -> dict[str, str]:
    """`load_comfyui_transformer`: the worst over its specs (the model family is not known)."""
    if not marked:
        return _spec("rules", "load_comfyui_transformer: no comfy_quant markers")
    if v < SPEC_MARKERS_SINCE:
        return _spec(
            "own",
            "load_comfyui_transformer: no spec reads markers before 0.5.22, so every spec "
            "loads the file unquantized",
        )
    return _spec(
        "markers",
        "load_comfyui_transformer per spec: Flux, Qwen-Image, Z-Image (no quant_markers) load "
        "it unquantized; MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (quant_markers) "
        "read the markers",
    )


# --- --transformer-weights-path ---------------------------------------------------------------


def override_reading(ck: Checkpoint, docs: list[HeaderDoc], release: str) -> tuple[str, str]:
    """(kind, why) of `_resolve_weight_override_quantization`, then `_resolve_quant_config`'s
    NVFP4 inference and its refusal (0.5.19-0.5.23, identical in the wheels). kind: "rules"
    (a header config or none needed: quantcheck's sglang rules decide), "invalid" (QC632),
    "refuses" (QC631) or "nvfp4" (the inferred ModelOpt config: QC633 / QC634)."""
    where = "_resolve_weight_override_quantization"
    header_config: str | None = None
    declaration: dict[str, Any] | None = None
    for hd in docs:
        r = route(hd, release)
        if r is not None:
            if r.kind == "error":
                return "rules", f"{where} -> {READER} raises: {r.why}"
            if header_config is not None and header_config != r.config:
                return "invalid", (
                    f'{where}: ValueError("Conflicting safetensors quantization declarations"): '
                    f"{header_config} and {r.config}"
                )
            header_config = r.config
        meta = _shard_metadata(ck, hd.file)
        for key in ("_quantization_metadata", "quantization_config"):
            raw = meta.get(key)
            if raw is None:
                continue
            try:
                doc = json.loads(raw)
            except (ValueError, RecursionError):
                return "invalid", f'{where}: ValueError("Invalid {key} in {hd.file}")'
            if not isinstance(doc, dict):
                return "invalid", (
                    f'{where}: ValueError("Invalid {key} in {hd.file}: expected an object")'
                )
            conflict = _merge_conflict(declaration or {}, doc)
            if conflict is not None:
                return "invalid", (
                    f'{where}: ValueError("Conflicting checkpoint quantization field {conflict!r}")'
                )
            declaration = _merged(declaration or {}, doc)
    if declaration is not None and "quant_method" in declaration:
        return "rules", (
            f"{where}: the header declares quant_method {declaration['quant_method']!r} "
            "(get_quant_config builds that config)"
        )
    if header_config is not None:
        return "rules", f"{where} -> {READER} -> {header_config}"
    evidence = "a header declaration" if declaration is not None else _quantized_tensor(ck)
    if evidence is None:
        return "rules", f"{where}: no declaration and no quantized tensors: unquantized"
    if _nvfp4_group(ck, docs) is None:
        return "refuses", (
            f"_resolve_quant_config: the file has {evidence} and no header config or "
            "quant_method declaration, no NVFP4 tensors to infer one from, and the markers are "
            f'never read: ValueError("{REFUSAL}")'
        )
    return "nvfp4", (
        "_resolve_quant_config: no header config; ModelOptFp4Config inferred from the NVFP4 "
        "tensors (build_nvfp4_config_from_safetensors_list): the NVFP4 route's findings and "
        "the layers it excludes decide"
    )


def _shard_metadata(ck: Checkpoint, file: str) -> dict[str, str]:
    for shard in ck.shards:
        if shard.name == file:
            return shard.header.metadata
    return {}


def _merge_conflict(base: dict[str, Any], incoming: dict[str, Any]) -> str | None:
    """The field `_merge_quant_declaration` raises on (equal values and nested objects merge)."""
    for key, value in incoming.items():
        previous = base.get(key)
        if isinstance(previous, dict) and isinstance(value, dict):
            hit = _merge_conflict(previous, value)
            if hit is not None:
                return hit
        elif key in base and previous != value:
            return key
    return None


def _merged(base: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in incoming.items():
        previous = out.get(key)
        out[key] = (
            _merged(previous, value)
            if isinstance(previous, dict) and isinstance(value, dict)
            else value
        )
    return out


def _quantized_tensor(ck: Checkpoint) -> str | None:
    """`detected_quantized_tensors`, said as the first tensor that trips it: a key ending in
    .weight_scale / .input_scale / .comfy_quant, or a .weight stored F8_E4M3, I8 or U8."""
    for name, t in ck.tensors.items():
        if name.endswith((".weight_scale", ".input_scale", ".comfy_quant")):
            return f"quantized tensors (e.g. {name!r})"
        if name.endswith(".weight") and t.dtype in ("F8_E4M3", "I8", "U8"):
            return f"quantized tensors (e.g. {name!r}, {t.dtype})"
    return None


def _nvfp4_group(ck: Checkpoint, docs: list[HeaderDoc]) -> int | None:
    """The group size `build_nvfp4_config_from_safetensors_list` infers (None: no config)."""
    for _, prefix in nvfp4_layers(ck, docs):
        w = ck.tensors.get(prefix + ".weight")
        s = ck.tensors.get(prefix + ".weight_scale")
        if w is not None and s is not None:
            group = nvfp4_group_size(w.shape, s.shape)
            if group is not None:
                return group
    return None


# --- the loaders' findings ---------------------------------------------------------------------


def loader_findings(
    ck: Checkpoint, docs: list[HeaderDoc], releases: tuple[str, ...], route_status: str
) -> list[Diagnostic]:
    """QC631-QC637 for `ck` (each names its loader; the release data says which releases
    have that loader). `route_status` is the status of the ModelOpt NVFP4 route's own
    findings (the ones 0.5.18's release data decides)."""
    inspected = [rel for rel in releases if version(rel) > NO_INSPECTOR]
    if not inspected:
        return []
    first = ck.shards[0].name if ck.shards else None
    out: list[Diagnostic] = []
    kind, why = override_reading(ck, docs, inspected[-1])
    tag = {"loaders": [OVERRIDE]}
    if kind == "refuses":
        out.append(_finding(R.QC631, f"{_OVERRIDE_SAYS}: {why}", first, tag))
    elif kind == "invalid":
        out.append(_finding(R.QC632, f"{_OVERRIDE_SAYS}: {why}", first, tag))
    marked = _marked_layers(ck)
    if kind == "nvfp4":
        nvfp4 = {p for _, p in nvfp4_layers(ck, docs)}
        others = {p: f for p, f in marked.items() if p not in nvfp4}
        cast, packed = _unquantized(others)
        parts = []
        if route_status != "ok":
            parts.append(f"the NVFP4 route's own findings ({route_status}: see QC308/QC318/QC619)")
        if packed:
            parts.append(_packed_text(packed))
        if cast:
            parts.append(_cast_text(cast))
        if parts:
            fails = route_status == "fails" or bool(packed)
            out.append(
                _finding(
                    R.QC634 if fails else R.QC633,
                    f"{_OVERRIDE_SAYS}: ModelOptFp4Config inferred from the NVFP4 tensors "
                    f"(no header config); {'; '.join(parts)}",
                    first,
                    tag,
                )
            )
    header_only = sorted({str(f) for f in marked.values()} & HEADER_FORMATS.keys())
    if header_only:
        formats = ", ".join(sorted({str(f) for f in marked.values()}))
        out.append(
            _finding(
                R.QC638,
                "sglang's MiniMax-H3 and --comfyui-mode loaders (minimax-h3, comfyui-mode) read "
                f"the markers, and resolve_comfy_checkpoint_quantization has no {header_only[0]!r}"
                f': NotImplementedError("Unsupported Comfy quantization format(s): {formats}")',
                first,
                {"loaders": list(MARKER_READERS)},
            )
        )
    if marked and any(version(rel) >= COMFYUI_SINCE for rel in inspected):
        out.extend(_comfyui_findings(marked, first))
    return out


_OVERRIDE_SAYS = "sglang's --transformer-weights-path loader (transformer-weights-path)"
_COMFYUI_SAYS = "sglang's --comfyui-mode loader (comfyui-mode)"


def _finding(rule: Any, message: str, file: str | None, data: dict[str, Any]) -> Diagnostic:
    return Diagnostic(rule, message, file=file, data=dict(data))


def _unquantized(layers: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(cast, packed) prefixes of quantized layers a loader builds unquantized: `fsdp_load`
    casts each stored weight to the parameter dtype (F8 weights dequantized with their
    weight_scale by `_maybe_dequantize_fp8`); a packed weight's stored shape does not fit its
    [N, K] parameter (the weight_loader's shape assertion stops the load)."""
    cast: list[str] = []
    packed: list[str] = []
    for prefix, fmt in layers.items():
        spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
        (packed if spec is not None and spec.packing != "none" else cast).append(prefix)
    return cast, packed


def _packed_text(packed: list[str]) -> str:
    n = len(packed)
    return (
        f"{n} packed layer{'s' if n > 1 else ''} (e.g. {packed[0]!r}) built unquantized do "
        "not fit their [N, K] parameter (AssertionError at weight load)"
    )


def _cast_text(cast: list[str]) -> str:
    n = len(cast)
    return (
        f"{n} quantized layer{'s' if n > 1 else ''} (e.g. {cast[0]!r}) built unquantized: "
        "cast to the parameter dtype and computed unquantized (F8 weights dequantized with "
        "their scale, others with their stored codes unscaled)"
    )


def _comfyui_findings(marked: dict[str, Any], file: str | None) -> list[Diagnostic]:
    """QC635 / QC636 (the specs without quant_markers), QC637 (the marker-reading specs)."""
    tag = {"loaders": [COMFYUI]}
    out = []
    cast, packed = _unquantized(marked)
    specs = "Flux, Qwen-Image and Z-Image (no quant_markers; every spec before 0.5.22)"
    if packed:
        out.append(
            _finding(R.QC636, f"{_COMFYUI_SAYS}, {specs}: {_packed_text(packed)}", file, tag)
        )
    if cast:
        out.append(_finding(R.QC635, f"{_COMFYUI_SAYS}, {specs}: {_cast_text(cast)}", file, tag))
    formats = {str(f) for f in marked.values()}
    if formats != {"int8_tensorwise"}:
        out.append(
            _finding(
                R.QC637,
                f"{_COMFYUI_SAYS}, MiniMax-H3 spec: the file has {', '.join(sorted(formats))} "
                'layers: ValueError("ComfyUI H3 integrated mode currently supports serialized '
                'INT8 ConvRot quantization")',
                file,
                tag,
            )
        )
    if "nvfp4" in formats:
        out.append(
            _finding(
                R.QC637,
                f"{_COMFYUI_SAYS}, Qwen-Image 2.1 spec: its quant_markers are resolved without "
                'the files: ValueError("MiniMax-H3 NVFP4 metadata requires checkpoint files")',
                file,
                tag,
            )
        )
    return out
