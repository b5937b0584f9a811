"""Run every rule over a checkpoint: whole-file rules once, layer rules once per distinct layer.

Diffusion checkpoints repeat the same layer layout hundreds of times. A layer's findings depend
only on its kind (`layer_kinds.signature`: marker fields and sources, tensor suffixes/dtypes/
shapes/files, and whether its name reads as an embedding), so the rules run once per kind;
other layers of that kind get copies renamed to their own prefix. Findings whose message names
the prefix are recomputed.
While many checkpoints are checked (`shared_layer_cache`), the format rules' findings are also
reused across checkpoints, keyed by the signature with files replaced by their shard position.
"""

from __future__ import annotations

from collections.abc import Iterator

from quantcheck.diagnostics import Diagnostic
from quantcheck.io.source import base_name
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.family.checks import family_findings
from quantcheck.rules.layers.checks import check_layer
from quantcheck.rules.layers.kinds import (
    LayerKinds,
    any_layer_has,
    hold,
    is_embedding_name,
    let_go,
)
from quantcheck.rules.markers.checks import check_marker_fields, check_orphans
from quantcheck.runtimes import load, registry, runtimes

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def layer_findings(
    layer: Layer, legacy: bool, mxfp8_meta: bool, runtime_checks: list[Any]
) -> Iterator[Diagnostic]:
    """Every per-layer rule for one layer: the format rules, then each runtime's own."""
    yield from format_findings(layer, legacy, mxfp8_meta)
    for checks in runtime_checks:
        yield from checks.layer_findings(layer)


def format_findings(layer: Layer, legacy: bool, mxfp8_meta: bool) -> Iterator[Diagnostic]:
    """The format rules of one layer: they read only the layer and the two file flags."""
    if layer.marker is not None:
        yield from check_marker_fields(layer.marker)
    yield from check_layer(layer, legacy, mxfp8_meta)


#: Format-rule findings shared across checkpoints while `shared_layer_cache` is on (many
#: checkpoints are checked in one run): file-free layer signature -> (prefix, files, findings).
_SHARED: dict[tuple[object, ...], tuple[str, tuple[str, ...], list[Diagnostic]]] | None = None
SHARED_MAX = 4096  # distinct signatures kept; the cache starts over when full


def shared_layer_cache(on: bool) -> None:
    """Share format-rule results across checkpoints (on) or stop and forget them (off).
    Results stay identical: only findings that name neither the layer nor a file are reused."""
    global _SHARED
    _SHARED = {} if on else None


def _shared_key(
    layer: Layer, legacy: bool, mxfp8_meta: bool, files: dict[str, int]
) -> tuple[object, ...]:
    """The layer's signature with each file replaced by its position among the shards."""
    m = layer.marker
    ts = layer.tensors
    return (
        len(files),
        legacy,
        mxfp8_meta,
        repr(m.fields) if m else None,
        tuple((s.origin, files.get(s.file, s.file)) for s in m.sources) if m else None,
        tuple(ts),
        tuple((t[1], t[2], files.get(t[5], t[5])) for t in ts.values()),
        is_embedding_name(layer),
    )


def _portable(found: list[Diagnostic], prefix: str, files: tuple[str, ...]) -> bool:
    """Whether `_moved` can carry findings to another layer and files exactly: the layer and
    files appear only in the fields it rewrites, never in the text."""
    names = [prefix, *files, *(base_name(f) for f in files)]
    for d in found:
        if (
            d.layer not in (prefix, None)
            or (d.file is not None and d.file not in files)
            or (d.tensor is not None and not d.tensor.startswith(prefix))
            or (d.pointer is not None and prefix not in d.pointer)
        ):
            return False
        text = f"{d.message}\0{d.data!r}\0{d.fix!r}"
        if any(n in text for n in names):
            return False
    return True


def _moved(d: Diagnostic, old: str, new: str, files: dict[str, str]) -> Diagnostic:
    """A copy of `d` for layer `new` (was `old`), its file renamed through `files`."""
    tensor = d.tensor
    if tensor is not None and tensor.startswith(old):
        tensor = new + tensor[len(old) :]
    return Diagnostic(  # positional, as in `renamed`
        d.code,
        d.message,
        None if d.file is None else files[d.file],
        tensor,
        new if d.layer == old else d.layer,
        None if d.pointer is None else d.pointer.replace(old, new, 1),
        d.fix,
        d.effects,
        d.severity,
        d.data,
    )


def _shared_format_findings(
    shared: dict[tuple[object, ...], tuple[str, tuple[str, ...], list[Diagnostic]]],
    layer: Layer,
    legacy: bool,
    mxfp8_meta: bool,
    files: dict[str, int],
    shard_names: tuple[str, ...],
) -> list[Diagnostic]:
    """`format_findings`, reused from an earlier checkpoint's layer of the same signature."""
    key = _shared_key(layer, legacy, mxfp8_meta, files)
    hit = shared.get(key)
    if hit is not None:
        prefix, old_files, found = hit
        if not found:
            return []
        names = dict(zip(old_files, shard_names, strict=True))
        return [_moved(d, prefix, layer.prefix, names) for d in found]
    found = list(format_findings(layer, legacy, mxfp8_meta))
    if _portable(found, layer.prefix, shard_names):
        if len(shared) >= SHARED_MAX:
            shared.clear()
        same = {f: f for f in shard_names}
        shared[key] = (
            layer.prefix,
            shard_names,
            [_moved(d, layer.prefix, layer.prefix, same) for d in found],
        )
    return found


def renamed(d: Diagnostic, old: str, layer: Layer) -> Diagnostic:
    """`d` for `layer`, found on layer `old` with the same signature. The copy shares every
    field it can (message, fix, effects, data; the tensor name the header already holds), so a
    copy costs one small slotted object."""
    new = layer.prefix
    tensor = d.tensor
    if tensor is not None and tensor.startswith(old):
        info = (
            layer.tensors.get(tensor[len(old) + 1 :])
            if tensor[len(old) : len(old) + 1] == "."
            else None
        )
        tensor = info[0] if info is not None else new + tensor[len(old) :]
    pointer = d.pointer
    return Diagnostic(  # positional (file, tensor, layer, pointer, fix, effects, ...): a copy
        d.code,  # is made per layer of a kind, and keywords cost more than the copy's fields
        d.message,
        d.file,
        tensor,
        new,
        None if pointer is None else pointer.replace(old, new, 1),
        d.fix,
        d.effects,
        d.severity,
        d.data,
    )


def checks_for(keys: tuple[str, ...] | None) -> tuple[str, ...]:
    """The `checks` hooks whose findings a report for target keys `keys` can show (None:
    every registered runtime's), in registration order.

    A default runtime's checks always run (their findings may affect other runtimes or none).
    Another runtime's checks run when it is targeted or a targeted runtime is `based_on` it
    (directly or through others): its checks give their findings effects on that runtime
    alone, so the findings of an untargeted one are never general (they affect a release of
    it) and never affect a target key; they could not show in the report nor change its
    release matrix (tests/test_checks_for.py compares reports with and without the skip)."""
    hit = _CHECKS_FOR.get(keys)
    if hit is not None:
        return hit
    every = runtimes()
    by_name = {rt.name: rt for rt in every}
    if keys is None:
        wanted = set(by_name)
    else:
        wanted = {rt.name for rt in every if rt.default_target}
        for key in keys:
            name: str | None = key.partition("@")[0]
            while name is not None and name not in wanted and name in by_name:
                wanted.add(name)
                name = by_name[name].based_on
    hit = tuple(rt.checks for rt in every if rt.checks and rt.name in wanted)
    if len(_CHECKS_FOR) >= 256:
        _CHECKS_FOR.clear()
    _CHECKS_FOR[keys] = hit
    return hit


#: target keys -> the `checks` hooks to run (`checks_for`)
_CHECKS_FOR: dict[tuple[str, ...] | None, tuple[str, ...]] = registry.runtime_cache()


def run_all_rules(ck: Checkpoint, keys: tuple[str, ...] | None = None) -> list[Diagnostic]:
    """Container/marker findings from loading, whole-file rules, then per-layer rules: every
    runtime's own checks (keys None), or those a report for target keys `keys` can show
    (`checks_for`). The layers are grouped by kind once (`layer_kinds`), for the rules too."""
    kinds = hold(ck)
    try:
        return _run_all_rules(ck, keys, kinds)
    finally:
        let_go(kinds)


def _run_all_rules(
    ck: Checkpoint, keys: tuple[str, ...] | None, kinds: LayerKinds
) -> list[Diagnostic]:
    out = list(ck.diagnostics)
    out.extend(check_orphans(ck))
    legacy = "scaled_fp8" in ck.tensors or any_layer_has(ck, "scaled_fp8")
    mxfp8_meta = {v.lower() for v in ck.quant_formats.values()} == {"mxfp8"}
    runtime_checks = [load(ref)(ck) for ref in checks_for(keys)]
    for checks in runtime_checks:
        out.extend(checks.file_findings())
    out.extend(family_findings(ck))
    # kind -> (the layer found on, its findings, whether a message names that layer)
    cache: dict[object, tuple[str, list[Diagnostic], bool]] = {}
    shared = _SHARED
    shard_names = tuple(s.name for s in ck.shards)
    files = {f: i for i, f in enumerate(shard_names)}
    for layer, kind in kinds.order:
        hit = cache.get(kind)
        if hit is not None:
            old, cached, named = hit
            if not cached:  # a clean layer: the common case
                continue
            if not named:
                out.extend(renamed(d, old, layer) for d in cached)
                continue
        if shared is not None:
            found = _shared_format_findings(shared, layer, legacy, mxfp8_meta, files, shard_names)
            for checks in runtime_checks:
                found.extend(checks.layer_findings(layer))
        else:
            found = list(layer_findings(layer, legacy, mxfp8_meta, runtime_checks))
        prefix = layer.prefix
        cache[kind] = (prefix, found, any(prefix in d.message for d in found))
        out.extend(found)
    for checks in runtime_checks:
        finish = getattr(checks, "finish", None)  # optional: a runtime revising its verdict
        if finish is not None:
            out = finish(out)
    return without_truncation_follow_ons(ck, out)


def without_truncation_follow_ons(ck: Checkpoint, found: list[Diagnostic]) -> list[Diagnostic]:
    """A truncated file is one finding (QC117): a layer whose marker tensor lies past the end
    of its file is not also reported as unmarked (QC314 would point at a marker finding
    that cannot exist: the marker bytes are simply missing)."""
    if not any(d.code == R.QC117.code for d in ck.diagnostics):
        return found
    cut = {
        name[: -len(".comfy_quant")]
        for s in ck.shards
        for name, t in s.header.tensors.items()
        if t.end > s.header.file_size and name.endswith(".comfy_quant")
    }
    return [d for d in found if not (d.code == R.QC314.code and d.layer in cut)]
