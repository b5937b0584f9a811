"""What `quantize` writes, and whether each target it was asked for loads it, judged by the check
rules themselves (not a second table of what loads where).

`plan_quantize` builds the output as a lazy draft: its header and markers are known before any
value is computed. `probe_finding` quantizes a small probe layer that way and runs the target's
rules on the header it would write: a finding that breaks or degrades the target refuses the
format (or its options, or the marker fields a release needs). `new_findings` does the same for
the whole planned checkpoint, so that layers a target cannot take are left as they are and the
written file checks clean for every target.
"""

from __future__ import annotations

from typing import Any

from quantcheck.checking import run_rules, select_diagnostics
from quantcheck.diagnostics import Diagnostic
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.rules.levels import Effect
from quantcheck.runtimes import loaders_of, registry, split_target, targets_of

#: The probe layer's name: a diffusion-model Linear, as the checkpoints quantize reads hold.
PROBE_LAYER = "model.diffusion_model.transformer_blocks.0.attn.to_q"
#: The probe's side: divisible by every block, group and rotation size the formats use.
PROBE_SIDE = 512


ALREADY = "already has a marker"  # why a layer with a marker is not quantized


def plan_quantize(
    ck: Checkpoint,
    fmt: str,
    options: dict[str, Any],
    target: str,
    include: list[str],
    exclude: list[str],
    refused: dict[str, str] | None = None,
) -> tuple[Any, list[str], dict[str, str]]:
    """(draft, quantized prefixes, skipped prefix -> reason); `refused` layers (the quantizer
    refused their values, or a target cannot take them) stay as they are."""
    from quantcheck.convert.eligible import (
        header_declared,
        marker_fields,
        shape_refusal,
        skip_reason,
    )
    from quantcheck.convert.layer import quantize_layer
    from quantcheck.fix.actions import replace_layer
    from quantcheck.fix.draft import Draft

    draft = Draft.of(ck)
    extra = marker_fields(fmt, target)
    declare = header_declared(fmt, target)
    done: list[str] = []
    skipped: dict[str, str] = {}
    for prefix, layer in ck.layers.items():
        w = layer.weight
        if w is None:
            continue
        if layer.marker is not None:
            skipped[prefix] = ALREADY
            continue
        if refused and prefix in refused:
            skipped[prefix] = refused[prefix]
            continue
        why = skip_reason(prefix, w.dtype, w.shape, include, exclude)
        if why is None:
            n, k = w.shape
            why = next(
                (r for t in targets_of(target) if (r := shape_refusal(fmt, n, k, options, t))), None
            )
        if why is not None:
            skipped[prefix] = why
            continue
        cur = draft.get(w.name)
        assert cur is not None
        lazy, marker = quantize_layer(cur.data, w.dtype, w.shape, fmt, options)
        if extra and marker is not None:
            marker = {**marker, **extra}
        lazy.name = prefix
        replace_layer(draft, prefix, lazy, marker)
        if declare and marker is not None:
            draft.set_header_entry(prefix, marker)
        draft.log("quantize", prefix, f"{fmt} {list(w.shape)}", "unsafe")
        done.append(prefix)
    return draft, done, skipped


def planned(draft: Any) -> Checkpoint:
    """The checkpoint `draft` would write, read as it would load (nothing is computed)."""
    from quantcheck.fix.planner import load_planned

    return load_planned(draft.files_out())


def harms(d: Diagnostic, key: str) -> bool:
    """Whether `d` breaks or degrades target key `key`."""
    return d.effect_at(key) is not Effect.NONE


def worst(found: list[Diagnostic], key: str) -> Diagnostic | None:
    """The finding that decides `key`'s verdict among `found` (fails before degraded)."""
    hit = [d for d in found if harms(d, key)]
    return min(hit, key=lambda d: d.effect_at(key) is not Effect.FAILS, default=None)


def release_name(key: str) -> str:
    """`NAME@RELEASE` for a target key (`invokeai` -> `invokeai@6.14.2`, its newest)."""
    rt, rel = split_target(key)
    return f"{rt.name}@{rel or rt.newest.name}"


def probe_finding(
    fmt: str,
    options: dict[str, Any],
    key: str,
    name: str = PROBE_LAYER,
    family: str | None = None,
) -> Diagnostic | None:
    """The finding that keeps target key `key` from loading a layer `quantize --to fmt` writes
    with `options` (and the marker fields `key` asks for), from the rules for `key` run on the
    header of a probe layer called `name`, quantized in memory; None when it loads it. A
    runtime with several loaders judges it by the one that reads a checkpoint of `family` (the
    model family of what is quantized: the probe's one name says none)."""
    memo = (fmt, tuple(sorted(options.items())), key, name, family)
    if memo in _PROBES:
        return _PROBES[memo]
    side = PROBE_SIDE
    for size in (options.get("group_size"), options.get("convrot_groupsize")):
        if isinstance(size, int) and size > 0 and side % size:
            side *= size
    draft, done, _ = plan_quantize(_probe(name, side), fmt, options, key, [name], [])
    ck = planned(draft)
    found = select_diagnostics(run_rules(ck, (key,)), target=key)
    # a one-layer probe whose name passes a family's key test is not that model (its other
    # modules "missing", QC862): the model's contract is judged on the whole planned file
    found = [d for d in found if d.code not in _family_codes()]
    hit = worst(spared(found, ck, (key,), family), key)
    if not done:  # the runtime's own shape limits refused even the probe's shape
        hit = None
    _PROBES[memo] = hit
    return hit


def _family_codes() -> frozenset[str]:
    """The model family's contract codes (rules/family/catalog.py)."""
    from quantcheck.rules.family.catalog import RULES

    return frozenset(r.code for r in RULES)


#: `probe_finding` answers (they depend on the registered runtimes' data and rules only)
_PROBES: dict[tuple[Any, ...], Diagnostic | None] = registry.runtime_cache()


def _probe(name: str, side: int) -> Checkpoint:
    """A one-layer BF16 checkpoint (`name`.weight, [side, side] zeros), in memory."""
    import json
    import struct

    from quantcheck.io.header import read_header
    from quantcheck.io.source import MemorySource
    from quantcheck.model.checkpoint import Shard, assemble

    size = side * side * 2
    meta = {f"{name}.weight": {"dtype": "BF16", "shape": [side, side], "data_offsets": [0, size]}}
    head = json.dumps(meta).encode()
    head += b" " * (-len(head) % 8)
    src = MemorySource(struct.pack("<Q", len(head)) + head + bytes(size), "probe.safetensors")
    return assemble(Checkpoint(inputs=[src.name]), [Shard(src, read_header(src))])


def loader_verdicts(
    ck: Checkpoint, key: str, found: list[Diagnostic]
) -> tuple[str | None, dict[str, Any]]:
    """(the deciding loader, each loader's verdict) of target key `key` on `ck` from the
    findings `found` (the runtime's `loaders` hook; sglang: `rules/sglang/loaders.py`);
    (None, {}) for a runtime with one loader."""
    from quantcheck.checking import target_paths

    entry = target_paths(ck, (key,)).get(key, {})
    specs = entry.get("loaders")
    hook = loaders_of(key)
    if not specs or hook is None:
        return None, {}
    loaders = hook.verdicts(found, key, specs)
    return hook.chosen(entry.get("loader_family"), loaders), loaders


def spared(
    found: list[Diagnostic], ck: Checkpoint, keys: tuple[str, ...], family: str | None = None
) -> list[Diagnostic]:
    """`found` without the findings that decide no verdict of `keys` on `ck`: those of a
    target's loaders that do not read it (sglang reads a model family with one loader:
    `rules/sglang/loaders.py`), judged as `check` judges them (`checking.deciding`; `family`:
    the model family to decide by, when not `ck`'s). `quantize` writes what that loader
    loads, and says which other loaders do not (`unloading`)."""
    from quantcheck.checking import deciding

    return deciding(ck, found, keys, family)


def unloading(ck: Checkpoint, keys: tuple[str, ...]) -> list[str]:
    """One line per target key and loader that takes `ck` but does not load it clean and does
    not decide its verdict, with why."""
    out = []
    for key in keys:
        found = select_diagnostics(run_rules(ck, (key,)), target=key)
        chosen, verdicts = loader_verdicts(ck, key, found)
        hook = loaders_of(key)
        for name, v in verdicts.items():
            if hook is not None and v["status"] not in ("ok", hook.na) and name != chosen:
                d = worst([f for f in found if name in f.data.get("loaders", (name,))], key)
                why = f"{d.code} {d.message}" if d is not None else v["reason"]
                out.append(f"{release_name(key)} {name}: {v['status']}: {why}")
    return out


def new_findings(
    before: list[Diagnostic], after: list[Diagnostic], keys: tuple[str, ...]
) -> list[Diagnostic]:
    """Findings of `after` not in `before` (by code and layer) that break or degrade a key."""
    from quantcheck.fix.planner import diagnostic_key

    old = {diagnostic_key(d) for d in before}
    return [d for d in after if diagnostic_key(d) not in old and any(harms(d, k) for k in keys)]
