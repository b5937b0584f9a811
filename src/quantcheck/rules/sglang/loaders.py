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
  `comfyui_checkpoints/spec.py` `load_comfyui_transformer`) loads the file through the spec of
  the pipeline it runs (`COMFYUI_SPECS` in `runtimes/sglang_releases.py`): MiniMax-H3 (INT8
  ConvRot only) and Qwen-Image 2.1 (`quant_markers`, which resolves without files: NVFP4
  fails) read the markers, both from 0.5.22; every other spec (Flux, Qwen-Image, Z-Image;
  every spec in 0.5.21) loads the file unquantized: the weight loader casts each stored weight
  to the parameter dtype (F8 weights dequantized with their scale), a packed weight does not
  fit its parameter. A detected family is read by its own spec only (none: the loader does
  not take that family, status `n/a`); an undetected one by every spec.
* `text-encoder`: `_get_encoder_quant_config` (0.5.19+): the header path, quanto INT8, then
  the marker inspector: the order of quantcheck's sglang rules (`header_path.py`).

Each loader's verdict is `{"status", "reason"}`, its status counted from the findings that
loader reads (`verdicts`, `reads`): the findings of QC631-QC638 name their loader
(`data["loaders"]`), and so do marker findings the header path hides from the other loaders;
the other findings count for the loaders that read the file the way quantcheck's sglang rules
model (`"rules"`: header path, then markers) or, without the header-path codes, for the
loaders that read the markers first (`"markers"`). A loader that fails therefore always has a
finding that says why. Loaders a release does not have are left out; for a detected model
family, the loaders that do not take it (MiniMax-H3's for a Flux file, `--comfyui-mode`
without a spec for it) are `n/a`.

One loader decides the target's verdict (`chosen_loader`), and every surface uses that one
decision: the status, its blocking / degrading counts, the per-release matrix, the exit code,
JSON, SARIF, GitHub and HTML output, `report`, and `quantize`'s and `fix`'s judges. It is the
loader sglang uses for the model family (`LOADER_BY_FAMILY`), and for a file whose family is
not detected `--transformer-weights-path`: the one loader whose reading of the quantization
does not depend on the model. The others need the model's family to take the file at all:
`load_comfyui_transformer` takes the spec of the pipeline it runs and raises "has no ComfyUI
checkpoint spec" for any other, and sglang's own ComfyUI node (`apps/ComfyUI_SGLDiffusion`,
`core/generator.py` `get_comfyui_model`, 0.5.21-0.5.23) picks that pipeline from ComfyUI's
model detection (`detect_unet_config`, whose key tests quantcheck's families use) and refuses
any other model ("Unsupported model type") before loading; MiniMax-H3's loader runs only for
the MiniMax-H3 pipeline, the text-encoder loader only for text encoders. (Issue 20 item 13 said
"the worst" loader for an unknown family; that verdict was decided by specs that cannot load a
file of no known family, e.g. MiniMax-H3's refusing an NVFP4 file.) A finding that no deciding
loader reads is kept as a note (`decided`: severity info, `data["decides"]` False, the loaders
that read it in `data["read_by"]`): true for a user who picks that loader, it neither counts in
the verdicts nor sets the exit code. Standard library only.
"""

from __future__ import annotations

import json
import weakref

from quantcheck.diagnostics import Diagnostic, Severity
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
from quantcheck.runtimes.registry import Loaders
from quantcheck.runtimes.sglang_releases import COMFYUI_SPECS, LOADER_BY_FAMILY, ComfySpec

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
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
#: the status of a loader that does not take the file's model family (module doc)
NA = "n/a"
_RANK = {NA: -1, "ok": 0, "degraded": 1, "fails": 2}
#: each loader as a person names it (text output)
SAID = {
    OVERRIDE: "--transformer-weights-path",
    H3: "MiniMax-H3's loader",
    COMFYUI: "--comfyui-mode",
    ENCODER: "the text-encoder loader",
}


def worst(statuses: list[str]) -> str:
    """The worst of ok / degraded / fails ("ok" for none; n/a is none)."""
    return max((s for s in statuses if s != NA), key=_RANK.__getitem__, default="ok")


def rank(status: str) -> int:
    """How bad a loader status is (n/a < ok < degraded < fails)."""
    return _RANK[status]


def chosen_loader(family: str | None, loaders: dict[str, dict[str, Any]]) -> str | None:
    """The loader whose verdict is the target's (module doc): the one sglang uses for `family`
    (the model family, None when it is not detected; `LOADER_BY_FAMILY`), else
    `--transformer-weights-path`. `loaders` are verdicts or readings by loader name; one that
    is n/a (or missing: 0.5.18 has one loader) is passed over. None when there is none."""
    usable = [n for n, v in loaders.items() if v.get("status") != NA and v.get("applies", True)]
    if family is not None:
        hit = LOADER_BY_FAMILY.get(family.lower())
        if hit in usable:
            return hit
    return OVERRIDE if OVERRIDE in usable else next(iter(usable), None)


#: what the readings of the last checkpoint asked share whatever the release (`check` asks for
#: every release of one checkpoint, then moves on; a weak reference keeps nothing alive)
_SHARED: list[tuple[weakref.ref[Checkpoint], int, dict[str, Any]]] = []


def shared(ck: Checkpoint, key: Any, make: Callable[[], Any]) -> Any:
    """`make()` once per checkpoint (the last one asked) and `key`: a fact about `ck` that does
    not depend on the release (its marked layers, family, header documents, NVFP4 group)."""
    entry = _SHARED[0] if _SHARED else None  # read once: checks on threads replace it
    if entry is None or entry[0]() is not ck or entry[1] != len(ck.tensors):
        entry = (weakref.ref(ck), len(ck.tensors), {})
        _SHARED[:] = [entry]
    memo = entry[2]
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _spec(mode: str, reason: str) -> dict[str, Any]:
    """A loader's reading of the file: which findings it counts (module doc) and why."""
    return {"mode": mode, "reason": reason}


# --- verdicts from findings ----------------------------------------------------------------


def reads(d: Diagnostic, name: str, spec: dict[str, Any]) -> bool:
    """Whether loader `name`, reading the file as `spec` says (`loaders_at`), counts finding
    `d` (module doc): a finding that names its loaders (`data["loaders"]`, at the releases
    `data["loader_releases"]` if given) counts for those; another one by the loader's mode."""
    mode = spec["mode"]
    tags = d.data.get("loaders")
    if tags is not None:
        if name not in tags or (mode == "own" and d.code not in LOADER_CODES):
            return False
        only = d.data.get("loader_releases")
        return only is None or spec.get("release") in only
    return (
        mode == "rules"
        or (mode == "markers" and d.code not in HEADER_CODES)
        or d.code.startswith(WHOLE_FILE)
    )


def verdicts(
    diags: list[Diagnostic], key: str, specs: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each loader's `{"status", "reason"}` at target key `key`: the worst effect of the
    findings it reads (`reads`), with how many fail and degrade it (`errors`, `degraded`) and
    the codes of those that decide it (`codes`); a loader that does not take the model's
    family is `n/a`."""
    fails = dict.fromkeys(specs, 0)
    degraded = dict.fromkeys(specs, 0)
    #: per loader, the codes of the findings it counts by effect, and of those that name it
    codes: dict[str, dict[Effect, dict[str, bool]]] = {n: {} for n in specs}
    seen: dict[tuple[str, int], Effect] = {}
    for d in diags:
        ident = (d.code, id(d.effects))
        eff = seen.get(ident)
        if eff is None:
            eff = seen[ident] = d.effect_at(key)
        if eff is Effect.NONE:
            continue
        tagged = "loaders" in d.data
        for name, spec in specs.items():
            if reads(d, name, spec):
                if eff is Effect.FAILS:
                    fails[name] += 1
                else:
                    degraded[name] += 1
                mine = codes[name].setdefault(eff, {})
                mine[d.code] = mine.get(d.code, False) or tagged
    out = {}
    for name, spec in specs.items():
        status = "fails" if fails[name] else "degraded" if degraded[name] else "ok"
        decide = codes[name].get(Effect.FAILS if fails[name] else Effect.DEGRADED, {})
        named = sorted(c for c, tagged in decide.items() if tagged)  # the reason names these
        out[name] = {
            "status": status if spec.get("applies", True) else NA,
            "reason": spec["reason"] + (f" ({', '.join(named)})" if named else ""),
            "errors": fails[name],
            "degraded": degraded[name],
            "codes": sorted(decide),
        }
    return out


# --- one decision per target key: which findings decide, which are notes ---------------------


def decisions(
    keys: tuple[str, ...], paths: dict[str, dict[str, Any]]
) -> dict[str, tuple[str, dict[str, dict[str, Any]]]]:
    """{key: (the deciding loader, every loader's reading)} for the keys of `keys` whose
    `paths` entry has loaders (the report's `paths`: `loaders`, `loader_family`)."""
    out = {}
    for key in keys:
        entry = paths.get(key, {})
        specs = entry.get("loaders")
        chosen = chosen_loader(entry.get("loader_family"), specs) if specs else None
        if specs and chosen is not None:
            out[key] = (chosen, specs)
    return out


def decided(
    diags: list[Diagnostic], keys: tuple[str, ...], paths: dict[str, dict[str, Any]]
) -> list[Diagnostic]:
    """`diags` with each finding that affects a key of `keys` through loaders that do not
    decide it (`decisions`) saying so: `data["read_by"]`, the loaders that read it there; made
    a note (severity info, `data["decides"]` False) when it decides no verdict of `keys`
    (module doc). Others are kept as they are."""
    picks = decisions(keys, paths)
    if not picks:
        return diags
    memo: dict[tuple[Any, ...], tuple[bool, list[str]] | None] = {}
    out = []
    for d in diags:
        tags, only = d.data.get("loaders"), d.data.get("loader_releases")
        ident = (d.code, id(d.effects), tags and tuple(tags), only and tuple(only))
        if ident not in memo:
            memo[ident] = _read_by(d, keys, picks)
        hit = memo[ident]
        out.append(d if hit is None else _marked(d, *hit))
    return out


def _read_by(
    d: Diagnostic, keys: tuple[str, ...], picks: dict[str, tuple[str, dict[str, Any]]]
) -> tuple[bool, list[str]] | None:
    """None when `d` decides a verdict of a key with loaders (or affects none); else whether
    it decides another runtime's verdict of `keys`, and the loaders that take the model and
    read it (in `LOADERS` order; none: no loader of this model reads it)."""
    elsewhere = False
    names: set[str] | None = None
    for key in keys:
        if d.effect_at(key) is Effect.NONE:
            continue
        pick = picks.get(key)
        if pick is None:
            elsewhere = True  # a runtime with one loader: every finding on it decides
            continue
        chosen, specs = pick
        if reads(d, chosen, specs[chosen]):
            return None
        names = names if names is not None else set()
        names.update(n for n, s in specs.items() if s.get("applies", True) and reads(d, n, s))
    if names is None:
        return None
    return elsewhere, [n for n in LOADERS if n in names]


def _marked(d: Diagnostic, decides: bool, read_by: list[str]) -> Diagnostic:
    """`d` naming the loaders that read it (`read_by`), a note unless it `decides`."""
    if "read_by" in d.data:
        return d
    import copy

    out = copy.copy(d)  # the finding is shared with the rules' caches: a copy says it
    out.data = {**d.data, "read_by": read_by, **({} if decides else {"decides": False})}
    if not decides:
        out.severity = Severity.INFO
    return out


def choice_said(chosen: str, loaders: dict[str, dict[str, Any]], family: str | None) -> list[str]:
    """The decision in words (the targets line, the HTML card): `read with
    --transformer-weights-path, sglang's loader for Flux.1`, then `--comfyui-mode would fail:
    QC636` for each loader worse than the deciding one (`verdicts`)."""
    how = f"read with {SAID[chosen]}"
    how += (
        f", sglang's loader for {family_title(family)}"
        if family
        else ", the model family not detected"
    )
    out = [how]
    verb = {"fails": "fail", "degraded": "degrade"}
    for name, v in loaders.items():
        if rank(v["status"]) > rank(loaders[chosen]["status"]):
            codes = v["codes"][:3] + (["…"] if len(v["codes"]) > 3 else [])
            out.append(f"{SAID[name]} would {verb[v['status']]}: {', '.join(codes)}")
    return out


def read_by_text(read_by: list[str]) -> str:
    """`(only with --comfyui-mode)`, `(only with MiniMax-H3's loader or the text-encoder
    loader)`: the loaders that read a finding the deciding loader does not, as a person says
    them."""
    if not read_by:
        return "(no loader of this model reads it)"
    said = [SAID[n] for n in read_by]
    return f"(only with {said[0] if len(said) == 1 else ', '.join(said[:-1]) + ' or ' + said[-1]})"


#: sglang's `loaders` hook (`Runtime.loaders`): what generic code (reports, renderers,
#: `quantize`, `fix`) asks of its loaders
SGLANG_LOADERS = Loaders(
    names=LOADERS,
    na=NA,
    chosen=chosen_loader,
    verdicts=verdicts,
    reads=reads,
    decided=decided,
    choice_said=choice_said,
    read_by_text=read_by_text,
)


# --- which findings each loader reads, per release ----------------------------------------


def loaders_at(
    ck: Checkpoint, release: str, docs: list[HeaderDoc], path: SglangPath
) -> dict[str, dict[str, Any]]:
    """Each loader's reading of `ck` at `release` (`_spec`, with the `release`; `applies`
    False for a loader that does not take the model's family); `path` is the header-first
    reading of the file (what the text-encoder loader does)."""
    v = version(release)
    family = loader_family(ck)
    if v <= NO_INSPECTOR:
        why = (
            "0.5.18 has no marker inspector: the transformer loader reads the header path, "
            "then the NVFP4 inference (_resolve_quant_config)"
        )
        out = {OVERRIDE: _spec("rules", why)}  # MiniMax-H3's own inspection: 0.5.19+
    else:
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
            out[COMFYUI] = _comfyui_reading(v, marked, family)
        out[ENCODER] = _spec(
            "rules",
            "_get_encoder_quant_config: header path, quanto INT8, then the markers ("
            + path.why
            + ")",
        )
        if family is not None:
            _not_taken(out, family)
    for spec in out.values():
        spec["release"] = release
    return out


def loader_family(ck: Checkpoint) -> str | None:
    """The model family sglang's loader choice follows (module doc): the family whose key test
    matches (ComfyUI's `detect_unet_config` tests, which sglang's ComfyUI node runs), and
    `qwen_image21` for a Qwen-Image file whose SwiGLU input is the fused `img_mlp.gate_up` of
    Qwen-Image 2.1 (what sglang's Qwen-Image 2.1 spec splits: comfyui_checkpoints/
    qwen_image21.py `_convert_weights`); None when no key test matches."""
    return shared(ck, "family", lambda: _family(ck))  # type: ignore[no-any-return]


def _family(ck: Checkpoint) -> str | None:
    from quantcheck.model.family_view import checkpoint_family

    fam = checkpoint_family(ck).family
    if fam is None:
        return None
    if fam.name == "qwen_image" and any(n.endswith(".img_mlp.gate_up.weight") for n in ck.tensors):
        return "qwen_image21"
    return fam.name


def family_title(family: str) -> str:
    """`Flux.1`, `Qwen-Image 2.1`: the family as a person names it."""
    from quantcheck.families.table import FAMILIES

    hit = next((f.title for f in FAMILIES if f.name == family), None)
    spec = comfyui_spec(family)
    return hit or (spec.title if spec is not None else family)


def comfyui_spec(family: str) -> ComfySpec | None:
    """sglang's `--comfyui-mode` spec for a model family (`COMFYUI_SPECS`), None when none."""
    return COMFYUI_SPECS.get(_norm(family))


def _norm(family: str) -> str:
    """A family name as `COMFYUI_SPECS` spells it (`MiniMax-H3` -> `minimax_h3`)."""
    return family.lower().replace("-", "_")


def _not_taken(out: dict[str, dict[str, Any]], family: str) -> None:
    """Mark the loaders that do not take `family` (its own loader and --comfyui-mode, whose
    spec `_comfyui_reading` judges, stay)."""
    own = LOADER_BY_FAMILY.get(family.lower(), OVERRIDE)
    if own not in out:
        return
    for name, spec in out.items():
        if name not in (own, COMFYUI):
            spec["applies"] = False
            spec["reason"] = (
                f"not a loader of {family_title(family)} models: sglang reads them with {SAID[own]}"
            )


def _marked_layers(ck: Checkpoint) -> dict[str, Any]:
    """{prefix: marker format} of the layers the marker inspector returns (a marker and a
    weight), or every F8/I8/U8 weight as mxfp8 under `quant_format` mxfp8 (do not modify:
    shared by the checkpoint's readings)."""
    return shared(ck, "marked", lambda: _inspected(ck))  # type: ignore[no-any-return]


def _inspected(ck: Checkpoint) -> dict[str, Any]:
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


def _comfyui_reading(
    v: tuple[int, ...], marked: dict[str, Any], family: str | None
) -> dict[str, Any]:
    """`load_comfyui_transformer` through the family's spec, or the worst over its specs while
    the model family is not detected."""
    where = "load_comfyui_transformer"
    if family is not None:
        spec = comfyui_spec(family)
        if spec is None or v < version(spec.since):
            out = _spec(
                "own",
                f"sglang has no --comfyui-mode spec for {family_title(family)} models here "
                f'({where} raises "... has no ComfyUI checkpoint spec"; sglang\'s ComfyUI node '
                'refuses the model type: "Unsupported model type")',
            )
            out["applies"] = False
            return out
        where = f"{where}, {spec.title} spec"
        if not marked:
            return _spec("rules", f"{where}: no comfy_quant markers")
        if spec.markers_since is None or v < version(spec.markers_since):
            since = f" before {spec.markers_since}" if spec.markers_since else ""
            return _spec("own", f"{where}: reads no markers{since}: loads the file unquantized")
        return _spec("markers", f"{where}: reads the markers ({_SPEC_READS[_norm(family)]})")
    if not marked:
        return _spec("rules", f"{where}: no comfy_quant markers")
    if v < SPEC_MARKERS_SINCE:
        return _spec(
            "own",
            f"{where}: no spec reads markers before 0.5.22, so every spec "
            "loads the file unquantized",
        )
    return _spec(
        "markers",
        f"{where} per spec: Flux, Qwen-Image, Z-Image (no quant_markers) load "
        "it unquantized; MiniMax-H3 (INT8 ConvRot only) and Qwen-Image 2.1 (quant_markers) "
        "read the markers",
    )


#: how each marker-reading --comfyui-mode spec reads the markers (`load_comfyui_transformer`,
#: 0.5.22+), and what it refuses (`_comfyui_findings`)
_SPEC_READS = {
    "minimax_h3": "inspect_minimax_h3_safetensors; INT8 ConvRot only",
    "qwen_image21": "quant_markers, resolved without the files: no NVFP4",
}


# --- --transformer-weights-path ---------------------------------------------------------------


def override_reading(ck: Checkpoint, docs: list[HeaderDoc], release: str) -> tuple[str, str]:
    """(kind, why) of `_resolve_weight_override_quantization`, then `_resolve_quant_config`'s
    NVFP4 inference and its refusal (0.5.19-0.5.23, identical in the wheels). kind: "rules"
    (a header config or none needed: quantcheck's sglang rules decide), "invalid" (QC632),
    "refuses" (QC631) or "nvfp4" (the inferred ModelOpt config: QC633 / QC634). A file
    that declares nothing in its headers reads the same on every release (worked out once)."""
    declared = (
        k in shard.header.metadata
        for shard in ck.shards
        for k in ("_quantization_metadata", "quantization_config")
    )
    if any(declared):
        return _override_reading(ck, docs, release)
    reading: tuple[str, str] = shared(ck, "override", lambda: _override_reading(ck, docs, release))
    return reading


def _override_reading(ck: Checkpoint, docs: list[HeaderDoc], release: str) -> tuple[str, str]:
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
    evidence = (
        "a header declaration"
        if declaration is not None
        else shared(ck, "quantized", lambda: _quantized_tensor(ck))
    )
    if evidence is None:
        return "rules", f"{where}: no declaration and no quantized tensors: unquantized"
    if shared(ck, "nvfp4_group", lambda: _nvfp4_group(ck, docs)) is None:
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
    """QC631-QC638 for `ck` (each names its loader; the release data says which releases
    have that loader), only for the loaders that take the model's family when it is detected
    (`loader_family`: its own loader, its --comfyui-mode spec). `route_status` is the status
    of the ModelOpt NVFP4 route's own findings (the ones 0.5.18's release data decides)."""
    inspected = [rel for rel in releases if version(rel) > NO_INSPECTOR]
    if not inspected:
        return []
    first = ck.shards[0].name if ck.shards else None
    family = loader_family(ck)
    out: list[Diagnostic] = []
    marked = _marked_layers(ck)
    if family is None or LOADER_BY_FAMILY.get(family.lower(), OVERRIDE) == OVERRIDE:
        out.extend(_override_findings(ck, docs, inspected[-1], marked, route_status, first))
    header_only = sorted({str(f) for f in marked.values()} & HEADER_FORMATS.keys())
    readers = marker_readers(family)
    if header_only and readers:
        formats = ", ".join(sorted({str(f) for f in marked.values()}))
        names = " and ".join({H3: "MiniMax-H3", COMFYUI: "--comfyui-mode"}[n] for n in readers)
        many = len(readers) > 1
        who = (
            f"{names} loader{'s' if many else ''} ({', '.join(readers)}) read{'' if many else 's'}"
        )
        out.append(
            _finding(
                R.QC638,
                f"sglang's {who} the markers, and resolve_comfy_checkpoint_quantization has "
                f"no {header_only[0]!r}"
                f': NotImplementedError("Unsupported Comfy quantization format(s): {formats}")',
                first,
                {"loaders": list(readers)},
            )
        )
    comfyui = [rel for rel in inspected if version(rel) >= COMFYUI_SINCE]
    if marked and comfyui:
        out.extend(_comfyui_findings(marked, first, family, tuple(comfyui)))
    return out


def marker_readers(family: str | None) -> tuple[str, ...]:
    """The loaders that read the comfy_quant markers whatever the header says, among those
    that take `family` (every one while it is not detected)."""
    if family is None:
        return MARKER_READERS
    spec = comfyui_spec(family)
    own = (H3,) if LOADER_BY_FAMILY.get(family.lower()) == H3 else ()
    return own + ((COMFYUI,) if spec is not None and spec.markers_since else ())


def _override_findings(
    ck: Checkpoint,
    docs: list[HeaderDoc],
    release: str,
    marked: dict[str, Any],
    route_status: str,
    first: str | None,
) -> list[Diagnostic]:
    """QC631-QC634: what `--transformer-weights-path` does with `ck` (`override_reading`)."""
    kind, why = override_reading(ck, docs, release)
    tag = {"loaders": [OVERRIDE]}
    if kind == "refuses":
        return [_finding(R.QC631, f"{_OVERRIDE_SAYS}: {why}", first, tag)]
    if kind == "invalid":
        return [_finding(R.QC632, f"{_OVERRIDE_SAYS}: {why}", first, tag)]
    if kind != "nvfp4":
        return []
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
    if not parts:
        return []
    fails = route_status == "fails" or bool(packed)
    return [
        _finding(
            R.QC634 if fails else R.QC633,
            f"{_OVERRIDE_SAYS}: ModelOptFp4Config inferred from the NVFP4 tensors "
            f"(no header config); {'; '.join(parts)}",
            first,
            tag,
        )
    ]


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


def _comfyui_findings(
    marked: dict[str, Any], file: str | None, family: str | None, releases: tuple[str, ...]
) -> list[Diagnostic]:
    """QC635 / QC636 (a spec without quant_markers), QC637 (a marker-reading spec refuses):
    the family's spec only (none without one), every spec while the family is not detected.
    `releases`: the modelled releases that have the --comfyui-mode loader."""
    tag: dict[str, Any] = {"loaders": [COMFYUI]}
    formats = {str(f) for f in marked.values()}
    if family is None:
        unquantized = "Flux, Qwen-Image and Z-Image (no quant_markers; every spec before 0.5.22)"
        out = _unquantized_findings(marked, f"{_COMFYUI_SAYS}, {unquantized}", file, tag)
        return out + _refusals(formats, ("minimax_h3", "qwen_image21"), file, tag)
    spec = comfyui_spec(family)
    if spec is None:
        return []
    says = f"{_COMFYUI_SAYS}, {spec.title} spec"
    if spec.markers_since is None:
        return _unquantized_findings(marked, f"{says} (no quant_markers)", file, tag)
    # a spec that reads markers from a later release loads the file unquantized before it
    before = [
        r for r in releases if version(spec.since) <= version(r) < version(spec.markers_since)
    ]
    early = {**tag, "loader_releases": before}
    out = _unquantized_findings(
        marked, f"{says} (no markers read before {spec.markers_since})", file, early
    )
    return (out if before else []) + _refusals(formats, (_norm(family),), file, tag)


def _unquantized_findings(
    marked: dict[str, Any], says: str, file: str | None, tag: dict[str, Any]
) -> list[Diagnostic]:
    """QC636 (packed layers do not fit) and QC635 (the others are cast) of a spec that loads
    the file unquantized."""
    cast, packed = _unquantized(marked)
    out = []
    if packed:
        out.append(_finding(R.QC636, f"{says}: {_packed_text(packed)}", file, tag))
    if cast:
        out.append(_finding(R.QC635, f"{says}: {_cast_text(cast)}", file, tag))
    return out


def _refusals(
    formats: set[str], specs: tuple[str, ...], file: str | None, tag: dict[str, Any]
) -> list[Diagnostic]:
    """QC637 of the marker-reading specs among `specs` (`_SPEC_READS`)."""
    out = []
    if "minimax_h3" in specs and formats != {"int8_tensorwise"}:
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
    if "qwen_image21" in specs and "nvfp4" in formats:
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
