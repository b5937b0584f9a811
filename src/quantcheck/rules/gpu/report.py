"""The GPU entries of a report: per target key whose runtime has GPU decisions, per `--gpu`
value, the `gpu_entry`; per such target, `gpu_needs`. Standard library only."""

from __future__ import annotations

from quantcheck.rules.gpu.entry import gpu_entry
from quantcheck.rules.gpu.findings import known_issues
from quantcheck.rules.gpu.needs import advice, advice_lines, native_from
from quantcheck.rules.gpu.plan import Plan
from quantcheck.rules.gpu.refusals import refusals
from quantcheck.runtimes import load, split_target

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from quantcheck.diagnostics import Diagnostic
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.rules.gpu.plan import GpuRules


def gpu_rules(key: str) -> GpuRules | None:
    """The GPU decisions of target key `key`'s runtime (None: it models none)."""
    rt, _ = split_target(key)
    return load(rt.gpu) if rt.gpu else None


def expect(
    ck: Checkpoint, target: str, spec: GpuSpec, findings: Sequence[Diagnostic] = ()
) -> dict[str, Any]:
    """The `targets[target].gpu[spec.given]` entry for one checkpoint (the public entry point
    for other checks, e.g. a LoRA's, which fill `execution[LAYER].lora_mode`: copy an
    execution record before changing it, records are shared between layers). ValueError when
    the target's runtime models no GPU decisions. `findings`: the checkpoint's, whose failing
    ones refuse their layers on every device (`rules/gpu/refusals.py`)."""
    rules = gpu_rules(target)
    if rules is None:
        raise ValueError(f"{target} models no GPU decisions")
    plan = Plan(ck)
    taken: dict[str, dict[str, str]] = {}
    refused = refusals(plan, rules, target, findings, taken)
    return gpu_entry(plan, rules, spec, refused, taken, target)


def gpu_targets(
    ck: Checkpoint,
    keys: tuple[str, ...],
    specs: list[GpuSpec],
    findings: Sequence[Diagnostic] = (),
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[Diagnostic]]:
    """({target key: {G: entry}}, {target key: needs}, known-issue findings) for the keys
    whose runtime has GPU decisions. `needs` is `native_from` plus `advice` (per given GPU
    that does not run every layer natively). Each entry's `known_issues` lists the codes and
    messages of the findings that name its GPU (ComfyUI targets). A layer with one of
    `findings` that fails on the target is refused on every GPU (`rules/gpu/refusals.py`)."""
    plan = Plan(ck)
    per_target: dict[str, dict[str, Any]] = {}
    needs: dict[str, dict[str, Any]] = {}
    for key in keys:
        rules = gpu_rules(key)
        if rules is None:
            continue
        taken: dict[str, dict[str, str]] = {}
        refused = refusals(plan, rules, key, findings, taken)
        entries = {s.given: gpu_entry(plan, rules, s, refused, taken, key) for s in specs}
        per_target[key] = entries
        lowest = native_from(plan, rules, key, refused)
        slow = [a for s in specs if (a := advice(rules, s, entries[s.given]))]
        needs[key] = {**lowest, "advice": slow, "advice_lines": advice_lines(slow)}
    found = known_issues(plan, specs, ck.shards[0].name if ck.shards else None)
    for key, entries in per_target.items():
        if not getattr(gpu_rules(key), "kitchen", False):
            continue
        for d in found:
            for g in d.data["gpus"]:
                entries[g]["known_issues"].append({"code": d.code, "message": d.message})
        for e in entries.values():
            if e["known_issues"]:
                codes = ", ".join(dict.fromkeys(k["code"] for k in e["known_issues"]))
                e["summary"] += f" · known issues: {codes}"
    return per_target, needs, found
