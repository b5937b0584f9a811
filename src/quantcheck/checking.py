"""Run every rule over a checkpoint and build a Report. Standard library only."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from quantcheck.diagnostics import Diagnostic, kind_of
from quantcheck.io.source import base_name
from quantcheck.model.checkpoint import Checkpoint, load_checkpoint
from quantcheck.model.family_view import checkpoint_family
from quantcheck.results import Report, release_matrix
from quantcheck.rules.levels import Effect
from quantcheck.runtimes import load, loaders_of, registry, split_target, targets_of
from quantcheck.runtimes.comfyui_releases import RULE_ALIASES

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def select_diagnostics(
    diags: Iterable[Diagnostic],
    *,
    target: str | None = "default",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> list[Diagnostic]:
    """Filter by target (None: keep every target's findings) and by code patterns (`QC3`,
    `QC301`, `QC3*`, or a rule name)."""

    def matches(d: Diagnostic, pats: list[str]) -> bool:
        return any(selects(p, d.code, d.name) for p in pats)

    keys = targets_of(target) if target is not None else None
    concerns = _concerns_memo(keys) if keys is not None else {}
    # the same, by code and the given effects object (findings copied per layer share it;
    # the entry holds the object, so its id is not reused while the loop runs)
    by_object: dict[tuple[str, int], tuple[Any, bool]] = {}
    out = []
    for d in diags:
        if keys is not None:
            ident = (d.code, id(d.effects))
            known = by_object.get(ident)
            if known is None:
                kind = kind_of(d)
                hit = concerns.get(kind)
                if hit is None:
                    hit = _concerns(d, keys)
                    if len(concerns) < 4096:
                        concerns[kind] = hit
                by_object[ident] = (d.effects, hit)
            else:
                hit = known[1]
            if not hit:
                continue
        if select and not matches(d, select):
            continue
        if ignore and matches(d, ignore):
            continue
        out.append(d)
    return out


def selects(pattern: str, code: str, name: str) -> bool:
    """Whether a `--select`/`--ignore` pattern (`QC3`, `QC301`, `QC3*`, a rule name; any case,
    surrounding blanks ignored; blank: nothing) takes rule `code` called `name`."""
    p = pattern.strip()
    if not p:
        return False
    up, low = p.upper(), p.lower()
    return (
        code.startswith(up)
        or fnmatch.fnmatch(code, up)
        or low == name
        or RULE_ALIASES.get(low) == code
    )


def check_selectors(patterns: Iterable[str]) -> None:
    """ValueError naming the first pattern that takes no rule of the registry (a typo such as
    `QC3O5` would otherwise select nothing and turn a gate green), with the nearest code or
    rule name as a suggestion."""
    patterns = [p for p in patterns if p.strip()]
    if not patterns:  # nothing to check: the catalogs stay unread (a clean check needs none)
        return
    from quantcheck.rules.registry import all_rules

    rules = all_rules()
    for pattern in patterns:
        if any(selects(pattern, c, r.name) for c, r in rules.items()):
            continue
        p = pattern.strip()
        near = _nearest_rule(p, rules)
        hint = f"; did you mean {near}?" if near else ""
        raise ValueError(
            f"{p!r} matches no rule code or name (codes like QC301, families like QC3, "
            f"globs like QC3*, or a rule name from `quantcheck rules`){hint}"
        )


#: characters a code is mistyped with (`QC3O5`), read as the digit they look like
_LOOKALIKE = str.maketrans("OILSZB", "011528")


def _nearest_rule(text: str, rules: dict[str, Any]) -> str | None:
    """The code or rule name nearest to `text`: a code written with look-alike letters, else
    the closest code or name by `difflib` (None when nothing is close)."""
    import difflib

    up = text.upper()
    if up.startswith("QC"):
        fixed = "QC" + up[2:].translate(_LOOKALIKE)
        if any(c.startswith(fixed) for c in rules):
            return fixed
    low = text.lower()
    choices = [*rules, *(r.name for r in rules.values())]
    scored = [(difflib.SequenceMatcher(None, low, c.lower()).ratio(), c) for c in choices]
    ratio, best = max(scored)
    return best if ratio >= 0.5 else None


def _concerns_memo(keys: tuple[str, ...]) -> dict[Any, bool]:
    """`_concerns` answers for target keys `keys`, by `kind_of` (effects depend only on the
    code and the given effects): shared by the checkpoints of a run until a runtime is
    (un)registered."""
    memo = _CONCERNS.get(keys)
    if memo is None:
        if len(_CONCERNS) >= 64:
            _CONCERNS.clear()
        memo = _CONCERNS[keys] = {}
    return memo


#: {target keys: {finding kind: whether a report for them shows it}}
_CONCERNS: dict[tuple[str, ...], dict[Any, bool]] = registry.runtime_cache()


def _concerns(d: Diagnostic, keys: tuple[str, ...]) -> bool:
    """Whether a finding belongs in a report for target keys `keys`: it breaks or degrades
    one of them, or no modelled release of any runtime (a general finding; what a runtime's own
    effects table says of a generic code does not count: `Diagnostic.affects_any_release`)."""
    if any(d.effect_at(k) is not Effect.NONE for k in keys):
        return True
    return not d.affects_any_release()


def run_rules(ck: Checkpoint, keys: tuple[str, ...] | None = None) -> list[Diagnostic]:
    """Container and marker findings from loading, plus every rule (`keys`: only the runtime
    checks a report for those target keys can show, `rules.engine.checks_for`)."""
    from quantcheck.rules.engine import run_all_rules

    return run_all_rules(ck, keys)


def check_checkpoint(
    ck: Checkpoint,
    *,
    target: str = "default",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    deep: bool = False,
    read_weights: bool = False,
    gpus: list[Any] | None = None,
    lora: list[str] | None = None,
    lora_strength: float = 1.0,
    lora_numbers: bool = False,
    lora_analysis: list[Any] | None = None,
) -> Report:
    """Check an opened checkpoint (`gpus`: `GpuSpec`s, see `labelled_check`; `lora`: also the
    QC83x findings of these LoRA files on it; `lora_numbers`: with their figures, reading the
    weights; `lora_analysis`: a list the LoRA analysis is appended to)."""
    return labelled_check(
        ck,
        target=target,
        select=select,
        ignore=ignore,
        deep=deep,
        read_weights=read_weights,
        gpus=gpus,
        lora=lora,
        lora_strength=lora_strength,
        lora_numbers=lora_numbers,
        lora_analysis=lora_analysis,
    )[0]


def labelled_check(
    ck: Checkpoint,
    *,
    target: str = "default",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    deep: bool = False,
    read_weights: bool = False,
    gpus: list[Any] | None = None,
    lora: list[str] | None = None,
    lora_strength: float = 1.0,
    lora_numbers: bool = False,
    lora_analysis: list[Any] | None = None,
) -> tuple[Report, dict[str, str]]:
    """`check_checkpoint`, and the `file_labels` of the checkpoint's files (path -> the name
    its diagnostics give). `gpus`: `GpuSpec`s to judge each target on (`--gpu`)."""
    targets = targets_of(target)
    diags = run_rules(ck, targets)
    per_release = release_paths(ck, targets)
    paths = target_paths(ck, targets, per_release)
    gpu: dict[str, Any] = {}
    needs: dict[str, Any] = {}
    if gpus:  # known bad combinations for those GPUs are findings too (QC80x)
        from quantcheck.rules.gpu.report import gpu_targets

        # a layer is refused on a GPU only by findings that decide a verdict (not those of a
        # loader that does not read the file: rules/sglang/loaders.py)
        deciding = [d for d in decided(diags, targets, paths) if d.data.get("decides") is not False]
        gpu, needs, found = gpu_targets(ck, targets, gpus, deciding)
        diags.extend(found)
    if deep:
        from quantcheck.rules.numeric.deep import deep_check

        diags.extend(deep_check(ck, read_weights=read_weights))
    if lora:
        from quantcheck.rules.lora.run import lora_diagnostics

        analysis, found_lora = lora_diagnostics(
            ck, lora, lora_strength, numbers=lora_numbers, targets=targets
        )
        diags.extend(found_lora)
        if lora_analysis is not None:
            lora_analysis.append(analysis)
        if gpu:  # each patched layer's lora_mode on each GPU (issue 25 x issue 24)
            from quantcheck.rules.lora.gpu import fill_lora_modes

            fill_lora_modes(gpu, analysis)
    if select or ignore:
        check_selectors([*(select or ()), *(ignore or ())])
        diags = select_diagnostics(diags, target=None, select=select, ignore=ignore)
    releases = release_matrix(diags, targets, per_release)
    diags = select_diagnostics(diags, target=target) if diags else diags
    diags = decided(diags, targets, paths)
    labels = file_labels([s.name for s in ck.shards] + ([ck.index] if ck.index else []))
    for d in diags:
        if d.file is not None:
            d.file = labels.get(d.file, d.file)
    diags.sort(key=Diagnostic.sort_key)
    inputs = [input_record(ck, s) for s in range(len(ck.shards))]
    stats = {
        "files": len(ck.shards),
        "tensors": len(ck.tensors),
        "layers": sum(1 for la in ck.layers.values() if "weight" in la.tensors),
        "markers": len(ck.markers),
    }
    report = Report(
        inputs=inputs,
        diagnostics=diags,
        targets=targets,
        stats=stats,
        releases=releases,
        paths=paths,
        gpu=gpu,
        gpu_needs=needs,
        family=checkpoint_family(ck).to_json(),
    )
    return report, labels


def target_paths(
    ck: Checkpoint,
    keys: tuple[str, ...],
    per_release: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per target key whose runtime has a `paths` hook: the summary keys it adds (taken from
    `per_release`, `release_paths`, where it has them)."""
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        rt, rel = split_target(key)
        if rt.paths:
            known = (per_release or {}).get(rt.name, {}).get(rel or rt.newest.name)
            out[key] = known if known is not None else load(rt.paths)(ck, rel)
    return out


def release_paths(ck: Checkpoint, keys: tuple[str, ...]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per runtime among `keys` whose `paths` hook says which of its loaders reads the file
    (`loaders`: sglang) and that models several releases: the hook's entry for each release
    ({runtime: {release: entry}}), which the release matrix decides by."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key in keys:
        rt, _ = split_target(key)
        if not rt.paths or len(rt.releases) < 2 or rt.name in out:
            continue
        hook = load(rt.paths)
        newest = hook(ck, rt.newest.name)
        if "loaders" in newest:
            out[rt.name] = {
                r.name: newest if r is rt.newest else hook(ck, r.name) for r in rt.releases
            }
    return out


def decided(
    diags: list[Diagnostic], keys: tuple[str, ...], paths: dict[str, dict[str, Any]]
) -> list[Diagnostic]:
    """`diags` with the findings that decide no verdict of `keys` made notes: those of a
    runtime's loaders (sglang's, in `paths`) that do not read the file (its `loaders` hook,
    `Loaders.decided`); as they are for every other runtime."""
    hooks = {
        id(hook): hook
        for k in keys
        if "loaders" in paths.get(k, {}) and (hook := loaders_of(k)) is not None
    }
    for hook in hooks.values():
        diags = hook.decided(diags, keys, paths)
    return diags


def decision_family(ck: Checkpoint, keys: tuple[str, ...]) -> str | None:
    """The model family the loader choice of `keys` follows on `ck` (None: not detected, or
    no runtime of `keys` chooses between loaders)."""
    entries = target_paths(ck, keys).values()
    return next((e["loader_family"] for e in entries if e.get("loader_family")), None)


def deciding(
    ck: Checkpoint, diags: list[Diagnostic], keys: tuple[str, ...], family: Any = None
) -> list[Diagnostic]:
    """The findings of `diags` that decide a verdict of `keys` on `ck` (`decided`); `family`,
    when given, is the model family to decide by instead of `ck`'s (a probe layer's name
    says no family: `quantize` judges it by its input's)."""
    paths = target_paths(ck, keys)
    if family is not None:
        paths = {k: {**e, "loader_family": family} for k, e in paths.items()}
    return [d for d in decided(diags, keys, paths) if d.data.get("decides") is not False]


def file_labels(paths: list[str]) -> dict[str, str]:
    """Short names for diagnostics: the base name, or the full path where base names collide."""
    if len(paths) == 1:  # one file (most checkpoints): nothing to collide with
        return {paths[0]: base_name(paths[0])}
    counts: dict[str, int] = {}
    for p in paths:
        counts[base_name(p)] = counts.get(base_name(p), 0) + 1
    return {p: base_name(p) if counts[base_name(p)] == 1 else p for p in paths}


def input_record(ck: Checkpoint, i: int) -> dict[str, object]:
    """What was read from one shard: its path, size and bytes fetched."""
    shard = ck.shards[i]
    rec: dict[str, object] = {
        "path": shard.name,
        "size": shard.header.file_size,
        "header_bytes": shard.header.header_len,
    }
    extra = getattr(shard.source, "describe", None)
    if callable(extra):
        rec.update(extra())
    if "snapshots" in shard.name:  # maybe read from the Hugging Face cache (no hub import else)
        from quantcheck.io.hubcache import origin

        cached = origin(shard.name)
        if cached is not None:
            rec["hub_cache"] = cached
    return rec


def check_paths(paths: list[str], **kw: object) -> Report:
    """Open `paths` (files, folders, index files: the shards of one checkpoint, resolved as
    `--as-one` resolves them) and check them."""
    from quantcheck.model.discover import as_one_spec

    jobs = int(kw.pop("jobs", 1))  # type: ignore[call-overload]
    with load_checkpoint(as_one_spec(list(paths)), jobs=jobs) as ck:
        return check_checkpoint(ck, **kw)  # type: ignore[arg-type]
