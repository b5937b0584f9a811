"""QC616-QC619, QC621-QC624, QC630: what sglang's header path does with a checkpoint (the model:
`header_path.py`). QC620 (the rowwise header formats) is a marker-format finding
(`rules/markers/checks.py`). Standard library only."""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic, Severity, distinct_kinds
from quantcheck.formats.table import (
    FORMATS,
    HEADER_FORMATS,
    ROWWISE_BF16,
    ROWWISE_FORMAT_VERSIONS,
    ROWWISE_FP8,
)
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.levels import Effect
from quantcheck.rules.sglang.header_path import (
    HEADER_CODES,
    HeaderDoc,
    SglangPath,
    header_docs,
    nvfp4_group_size,
    nvfp4_layers,
    sglang_path,
    sglang_paths,
    short,
)
from quantcheck.rules.sglang.loaders import (
    MARKER_READERS,
    WHOLE_FILE,
    loader_family,
    loader_findings,
    loaders_at,
    marker_readers,
    shared,
)
from quantcheck.runtimes import get_runtime, registry

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

POINTER = "/__metadata__/_quantization_metadata"


def _releases() -> tuple[str, ...]:
    """sglang's modelled releases, oldest first."""
    hit = _RELEASES.get("sglang")
    if hit is None:
        hit = _RELEASES["sglang"] = get_runtime("sglang").release_names()
    return hit


#: `_releases` (the release data changes only when a runtime is (un)registered)
_RELEASES: dict[str, tuple[str, ...]] = registry.runtime_cache()


def path_json(ck: Checkpoint, release: str | None) -> dict[str, Any]:
    """`path` / `path_reason` / `path_config` of the sglang target at `release` (None: newest),
    how each of its loaders reads the file (`loaders`, `rules/sglang/loaders.py`; the report
    counts their findings into verdicts) and the model family the deciding loader follows
    (`loader_family`), for the JSON summary (the `paths` hook of the sglang runtime record)."""
    rel = release or _releases()[-1]
    every: dict[str, dict[str, Any]] = shared(ck, "path_json", lambda: _path_jsons(ck))
    hit = every.get(rel)
    if hit is not None:
        return {**hit}  # the caller's own dict (its values are shared: do not modify them)
    docs, _ = _read(ck)
    path = sglang_path(ck, rel, docs)
    return _entry(ck, rel, docs, path, loader_family(ck))


def _path_jsons(ck: Checkpoint) -> dict[str, dict[str, Any]]:
    """`path_json` for every modelled release: the release matrix asks for each."""
    docs, paths = _read(ck)
    family = loader_family(ck)
    return {rel: _entry(ck, rel, docs, path, family) for rel, path in paths.items()}


def _entry(
    ck: Checkpoint, rel: str, docs: list[HeaderDoc], path: SglangPath, family: str | None
) -> dict[str, Any]:
    return {
        **path.to_json(),
        "loaders": loaders_at(ck, rel, docs, path),
        "loader_family": family,
    }


def _read(ck: Checkpoint) -> tuple[list[HeaderDoc], dict[str, SglangPath]]:
    """`ck`'s header documents and its path at every modelled release, worked out once per
    checkpoint (its rules and each release's `path_json` ask: `loaders.shared`)."""
    releases = _releases()
    docs: list[HeaderDoc] = shared(ck, "docs", lambda: header_docs(ck))
    paths = shared(ck, ("paths", releases), lambda: sglang_paths(ck, releases, docs))
    return docs, paths


class HeaderPathChecks:
    """The header-path findings of one checkpoint (used by `SglangChecks`)."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck
        self.docs, self.paths = _read(ck)
        self.releases = _releases()
        #: the header path takes the file on every release (the marker rules never run)
        self.everywhere = all(
            p.route is not None and p.route.kind in ("fp8", "rowwise", "error")
            for p in self.paths.values()
        )
        newest = self.paths[self.releases[-1]]
        self.rowwise: HeaderDoc | None = None
        if newest.route is not None and newest.route.kind == "rowwise":
            self.rowwise = next(hd for hd in self.docs if hd.file == newest.route.file)
        self.fp8_layers = self._rowwise_fp8_layers()

    # --- whole file -------------------------------------------------------------------------

    def file_findings(self) -> Iterator[Diagnostic]:
        yield from self._path()
        yield from self._raises()
        yield from self._swept()
        yield from self._ignored()
        yield from self._nvfp4_group_size()
        if self.rowwise is not None:
            yield from self._rowwise_header(self.rowwise)
            yield from self._rowwise_tensors(self.rowwise)

    def _path(self) -> Iterator[Diagnostic]:
        if not self.everywhere:
            return  # the JSON summary's `path` still says which release reads the header
        header = {rel: p for rel, p in self.paths.items() if p.path == "header"}
        newest = self.paths[self.releases[-1]]
        shown = newest if newest.path == "header" else next(iter(header.values()))
        head = (
            f"sglang reads this file through its header path ({shown.why})"
            if len(header) == len(self.paths)
            else f"sglang {', '.join(header)} read{'s' if len(header) == 1 else ''} this file "
            f"through its header path ({shown.why})"
        )
        configs = {p.route.config for p in header.values() if p.route is not None}
        per = ""
        if len(configs) > 1 or len(header) != len(self.paths):
            per = "; per release: " + ", ".join(_runs(self.paths))
        tail = (
            ": its text-encoder loader tries this before the marker inspector and its "
            "--transformer-weights-path loader reads only this, so the comfy_quant marker "
            "rules do not apply to sglang for it (the MiniMax-H3 and ComfyUI single-file "
            "loaders read markers instead)"
            if self.everywhere
            else ""
        )
        yield Diagnostic(
            R.QC616,
            head + tail + per,
            file=shown.route.file if shown.route else None,
            pointer=POINTER,
            data={"paths": {rel: p.path for rel, p in self.paths.items()}},
        )

    def _raises(self) -> Iterator[Diagnostic]:
        """QC624: the header path raises before any marker is read."""
        hit = next(
            (p for p in self.paths.values() if p.route is not None and p.route.kind == "error"),
            None,
        )
        if hit is None or hit.route is None:
            return
        yield Diagnostic(
            R.QC624,
            f"sglang's header path stops the load: {hit.route.why}",
            file=hit.route.file,
            pointer=POINTER,
        )

    def _swept(self) -> Iterator[Diagnostic]:
        """QC617 / QC630: the whole-model Fp8Config builds every marked layer as a per-tensor
        FP8 linear (float8_e4m3fn [N, K] weight, a [1] PerTensorScaleParameter scale), and
        fsdp_load casts each tensor to that parameter's dtype before its weight_loader: a
        layer whose weight is not a plain [N, K] or whose scale has more than one element
        fails the weight_loader's shape assertion (QC630); a scalar-scaled layer stored in
        another dtype loads value-cast to e4m3 (QC617)."""
        fp8 = next(
            (p.route for p in self.paths.values() if p.route is not None and p.route.kind == "fp8"),
            None,
        )
        if fp8 is None:
            return
        doc = next(hd.doc for hd in self.docs if hd.file == fp8.file)
        ignored: set[str] = set()
        for key in ("ignored_layers", "modules_to_not_convert"):
            names = doc.get(key)
            if isinstance(names, list):
                ignored.update(n for n in names if isinstance(n, str))
        cast: dict[str, list[str]] = {}
        unfit: dict[str, list[str]] = {}
        for la in self.ck.layers.values():
            m = la.marker
            w = la.weight
            if m is None or w is None or la.prefix in ignored:
                continue
            fmt = m.format
            if isinstance(fmt, str) and fmt in HEADER_FORMATS:
                continue
            name = fmt if isinstance(fmt, str) else short(fmt)
            spec = FORMATS.get(fmt) if isinstance(fmt, str) else None
            scale = la.tensors.get("weight_scale")
            many = scale is not None and _numel(scale.shape) > 1
            if len(w.shape) != 2 or (spec is not None and spec.packing != "none") or many:
                unfit.setdefault(name, []).append(la.prefix)
            elif w.dtype != "F8_E4M3":
                cast.setdefault(name, []).append(la.prefix)
        head = "sglang's header path builds one whole-model Fp8Config for this file"
        for rule, layers, tail in (
            (
                R.QC630,
                unfit,
                "do not fit its per-tensor FP8 linears (a plain [N, K] weight, a one-element "
                "scale) and the load stops at weight load (fsdp_load: 'Failed to shard/load "
                "parameter')",
            ),
            (
                R.QC617,
                cast,
                "load as per-tensor FP8 without an error: fsdp_load casts the stored weights "
                "to float8_e4m3fn (values rounded; the markers that say otherwise are never "
                "read)",
            ),
        ):
            if not layers:
                continue
            n = sum(len(v) for v in layers.values())
            first = next(iter(layers.values()))[0]
            yield Diagnostic(
                rule,
                f"{head}: its {n} {', '.join(sorted(layers))} layer{'s' if n > 1 else ''} "
                f"(e.g. {first!r}) {tail}",
                file=fp8.file,
                pointer=POINTER,
                data={"formats": sorted(layers), "layers": n},
            )

    def _ignored(self) -> Iterator[Diagnostic]:
        """QC618: a header declaration the header path drops silently."""
        for hd in self.docs:
            if hd.bad_json:
                yield Diagnostic(
                    R.QC618,
                    "__metadata__._quantization_metadata is not valid JSON: sglang's header "
                    "path drops it without a message (get_quant_config_from_safetensors_"
                    "metadata returns None"
                    + (
                        ", then reads __metadata__.quantization_config)"
                        if hd.key == "quantization_config"
                        else ")"
                    ),
                    file=hd.file,
                    pointer=POINTER,
                )
                continue
            doc = hd.doc
            if not isinstance(doc, dict) or "quant_method" in doc or "format_version" in doc:
                continue
            layers = doc.get("layers")
            if not isinstance(layers, dict):
                continue
            fmts = sorted(
                {
                    v["format"]
                    for v in layers.values()
                    if isinstance(v, dict)
                    and isinstance(v.get("format"), str)
                    and ("float8" in v["format"] or v["format"] == "nvfp4")
                }
            )
            if fmts:
                yield Diagnostic(
                    R.QC618,
                    f"{hd.key} declares {', '.join(fmts)} layers but has no format_version: "
                    "sglang's header path returns None for it without a message (0.5.19+ "
                    "then read the markers; 0.5.18 sees no quantization)",
                    file=hd.file,
                    pointer=POINTER,
                )

    def _nvfp4_group_size(self) -> Iterator[Diagnostic]:
        """QC619: 0.5.18's NVFP4 builder takes one group size from the first layer."""
        p = self.paths[self.releases[0]]
        if p.route is None or p.route.kind != "nvfp4":
            return
        sizes: list[tuple[str, int]] = []
        for _, prefix in nvfp4_layers(self.ck, self.docs):
            w = self.ck.tensors.get(prefix + ".weight")
            s = self.ck.tensors.get(prefix + ".weight_scale")
            if w is None or s is None:
                continue
            g = nvfp4_group_size(w.shape, s.shape)
            if g is not None:
                sizes.append((prefix, g))
        if not sizes:
            return
        first, chosen = sizes[0]
        wrong = [(pre, g) for pre, g in sizes if g != 16]
        if not wrong and chosen == 16:
            return
        if chosen == 16:
            why = f"{len(wrong)} layer{'s' if len(wrong) > 1 else ''} give another (e.g. " + (
                f"{wrong[0][0]!r}: {wrong[0][1]})"
            )
        else:
            why = "NVFP4 blocks are 16 wide, so every layer computes with the wrong grouping"
        yield Diagnostic(
            R.QC619,
            f"sglang 0.5.18 applies NVFP4 group size {chosen}, inferred from {first!r} "
            f"(2 * weight columns / block-scale columns), to every NVFP4 layer; {why}",
            file=p.route.file,
            layer=first,
            data={"group_size": chosen},
        )

    # --- 0.5.23 rowwise FP8 -----------------------------------------------------------------

    def _rowwise_fp8_layers(self) -> set[str]:
        hd = self.rowwise
        if hd is None or not isinstance(hd.doc, dict):
            return set()
        layers = hd.doc.get("layers")
        if not isinstance(layers, dict):
            return set()
        return {
            name
            for name, entry in layers.items()
            if (entry.get("format") if isinstance(entry, dict) else entry) == ROWWISE_FP8
        }

    def _rowwise_header(self, hd: HeaderDoc) -> Iterator[Diagnostic]:
        """QC621/QC622: RowwiseFp8Config._from_metadata's header checks."""
        doc: dict[str, Any] = hd.doc
        ver = doc.get("format_version")
        if ver not in ROWWISE_FORMAT_VERSIONS:
            yield Diagnostic(
                R.QC621,
                f"the header declares {ROWWISE_FP8} layers with format_version {short(ver)}: "
                'sglang 0.5.23 raises RowwiseFp8Error ("unsupported quantization '
                f"format_version {short(ver)}; expected one of "
                f'{list(ROWWISE_FORMAT_VERSIONS)}")',
                file=hd.file,
                pointer=POINTER + "/format_version",
                data={"format_version": short(ver)},
            )
        layers = doc.get("layers")
        problems: list[str] = []
        if not isinstance(layers, dict) or not layers:
            problems.append("_quantization_metadata has no 'layers' map")
        else:
            bad = [
                (name, entry.get("format") if isinstance(entry, dict) else entry)
                for name, entry in layers.items()
                if (entry.get("format") if isinstance(entry, dict) else entry)
                not in (ROWWISE_FP8, ROWWISE_BF16)
            ]
            if bad:
                name, fmt = bad[0]
                more = f" ({len(bad)} layers)" if len(bad) > 1 else ""
                problems.append(f"unknown quant format {short(fmt)} for layer {short(name)}{more}")
            if not self.fp8_layers:
                problems.append(
                    f"_quantization_metadata declares no quantized layers ({ROWWISE_FP8})"
                )
        qc = doc.get("quant_configs", {})
        desc = qc.get(ROWWISE_FP8) if isinstance(qc, dict) else None
        if not isinstance(desc, dict):
            problems.append(f"missing quant_configs[{ROWWISE_FP8!r}] layout descriptor")
        elif desc.get("scale_recipe") != "rowwise":
            problems.append(
                f"unsupported FP8 scale_recipe {short(desc.get('scale_recipe'))}; only 'rowwise' "
                "is supported"
            )
        for text in problems:
            yield Diagnostic(
                R.QC622,
                f'sglang 0.5.23 refuses this rowwise FP8 header: RowwiseFp8Error("{text}")',
                file=hd.file,
                pointer=POINTER,
            )

    def _rowwise_tensors(self, hd: HeaderDoc) -> Iterator[Diagnostic]:
        """QC623, file part: missing weights/scales and scales of non-FP8 layers (sglang reads
        the tensors of the file that holds the header)."""
        names = {n for n, t in self.ck.tensors.items() if t.file == hd.file}
        for prefix in sorted(self.fp8_layers):
            for suffix in ("weight", "weight_scale"):
                if f"{prefix}.{suffix}" not in names:
                    yield Diagnostic(
                        R.QC623,
                        f"FP8 layer {prefix!r} missing {suffix} tensor {prefix + '.' + suffix!r} "
                        "(sglang 0.5.23 RowwiseFp8Error)",
                        file=hd.file,
                        layer=prefix,
                    )
                    break
        stray = sorted(
            n
            for n in names
            for suffix in (".weight_scale", ".input_scale")
            if n.endswith(suffix) and n[: -len(suffix)] not in self.fp8_layers
        )
        if stray:
            more = f" ({len(stray)} tensors)" if len(stray) > 1 else ""
            yield Diagnostic(
                R.QC623,
                f"unexpected quantization tensor {stray[0]!r} for a non-FP8 layer{more}: "
                "sglang 0.5.23's rowwise path refuses scales of layers it does not quantize",
                file=hd.file,
                tensor=stray[0],
            )

    # --- per layer --------------------------------------------------------------------------

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        """QC623: the tensors of one rowwise FP8 layer (_validate_fp8_tensors)."""
        if layer.prefix not in self.fp8_layers or self.rowwise is None:
            return
        p = layer.prefix
        w = layer.tensors.get("weight")
        s = layer.tensors.get("weight_scale")
        if w is None or s is None:
            return  # the file part reports it
        problems: list[tuple[str, str]] = []
        if w.dtype != "F8_E4M3":
            problems.append((w.name, f"expected dtype F8_E4M3, got {w.dtype}"))
        elif len(w.shape) != 2:
            problems.append((w.name, f"expected 2-D weight, got shape {list(w.shape)}"))
        else:
            if s.dtype != "F32":
                problems.append((s.name, f"expected dtype F32, got {s.dtype}"))
            elif list(s.shape) != [w.shape[0]]:
                problems.append(
                    (
                        s.name,
                        f"row-wise scale must have shape [{w.shape[0]}], got {list(s.shape)}",
                    )
                )
        i = layer.tensors.get("input_scale")
        if i is not None and (i.dtype != "F32" or list(i.shape) != [1]):
            problems.append(
                (
                    i.name,
                    f"static input_scale must be float32 shape [1], got dtype={i.dtype} "
                    f"shape={list(i.shape)}",
                )
            )
        for tensor, text in problems:
            yield Diagnostic(
                R.QC623,
                f"{tensor}: {text} (sglang 0.5.23 RowwiseFp8Error for rowwise FP8 layer {p!r})",
                file=w.file,
                tensor=tensor,
                layer=p,
            )

    # --- the header path hides the marker path ----------------------------------------------

    def _nvfp4_route_status(self, diags: list[Diagnostic]) -> str:
        """The status of the ModelOpt NVFP4 route `--transformer-weights-path` takes without a
        header config (build_nvfp4_config_from_safetensors_list): what the findings 0.5.18's
        release data decides (the ones that model that builder: group size, padded scales,
        convrot ignored) give at 0.5.18, without QC611 (0.5.18 not reading markers)."""
        oldest = get_runtime("sglang").releases[0]
        codes = set(oldest.effects) - {R.QC611.code}
        kinds = distinct_kinds([d for d in diags if d.code in codes]).values()
        return _status_of({d.effect_at(f"sglang@{oldest.name}") for d in kinds})

    def finish(self, diags: list[Diagnostic], release_codes: set[str]) -> list[Diagnostic]:
        """The loaders' findings (QC631-QC637, `loader_findings`) added; when the header path
        takes the file on every release, the marker path's findings concern only the loaders
        that read the markers whatever the header says (MiniMax-H3, --comfyui-mode): they are
        kept, named as those loaders' (`data["loaders"]`)."""
        unreadable = any(
            d.code.startswith(WHOLE_FILE) and d.effective_severity is Severity.ERROR for d in diags
        )  # a file that cannot be read whole (or a shard set with a shard missing) fails on
        # every loader: no follow-ons about how each would load it
        found = (
            []
            if unreadable
            else loader_findings(self.ck, self.docs, self.releases, self._nvfp4_route_status(diags))
        )
        if not self.everywhere:
            return diags + found
        out = []
        readers = marker_readers(loader_family(self.ck)) or MARKER_READERS
        for d in diags:
            if d.code in HEADER_CODES or d.code.startswith(("QC1", "QC5")):
                out.append(d)
                continue
            effs = d.effective_effects
            on_sglang = effs.get("sglang", Effect.NONE) is not Effect.NONE or any(
                d.effect_at(f"sglang@{rel}") is not Effect.NONE for rel in self.releases
            )
            others = any(e is not Effect.NONE for rt, e in effs.items() if rt != "sglang")
            if not on_sglang or (others and d.code in release_codes):
                out.append(d)  # not about sglang, or its sglang effect is fixed per release
                continue
            out.append(
                Diagnostic(
                    d.code,
                    d.message,
                    file=d.file,
                    tensor=d.tensor,
                    layer=d.layer,
                    pointer=d.pointer,
                    fix=d.fix,
                    effects=d.effects,
                    severity=d.severity,
                    data={**d.data, "loaders": list(readers)},
                )
            )
        return out + found


def _status_of(effects: set[Effect]) -> str:
    if Effect.FAILS in effects:
        return "fails"
    return "degraded" if Effect.DEGRADED in effects else "ok"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _runs(paths: dict[str, SglangPath]) -> list[str]:
    """`0.5.18-0.5.22 header (Fp8Config)`, `0.5.23 header (RowwiseFp8Config)`: consecutive
    releases with the same path and config as one item."""
    runs: list[tuple[str, str, str]] = []  # (first, last, text)
    for rel, p in paths.items():
        text = p.path + (f" ({p.route.config})" if p.route else "")
        if runs and runs[-1][2] == text:
            runs[-1] = (runs[-1][0], rel, text)
        else:
            runs.append((rel, rel, text))
    return [f"{a}-{b} {t}" if a != b else f"{a} {t}" for a, b, t in runs]


__all__ = ["HEADER_CODES", "HeaderPathChecks", "path_json"]
