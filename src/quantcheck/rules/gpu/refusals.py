"""Layers a target cannot load or run on any device: those with a finding whose effect on the
target is `fails` (a format it has no op for, a companion its kernels refuse, ...). Such a
layer is `refused` on every GPU, with the finding's code in the reason, whatever the device
gates say; a runtime's GPU rules may take a finding over when their own per-layer decision
models it per device (`GpuRules.decides`: then it is listed in `taken`, and the entry says
where it does not stop the layer).

A failing finding that names no layer (a file-level one) changes no GPU entry, unless the
runtime declares its code load-blocking for some formats (`GpuRules.blocking`, the runtime's
data): then every quantized layer of those formats is refused with it, and every quantized
layer for the format "*" (the whole load stops: sglang's QC631 undeclared quantized tensors,
QC615 MXFP8 weight load, ...). The caller passes only findings that decide the target's
verdict (a loader path that does not read the file blocks nothing). Standard library only."""

from __future__ import annotations

from quantcheck.rules.levels import Effect

#: the `GpuRules.blocking` format of a code that stops the whole load
EVERY = "*"

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from quantcheck.diagnostics import Diagnostic
    from quantcheck.rules.gpu.plan import Decision, GpuRules, Plan


def refusals(
    plan: Plan,
    rules: GpuRules,
    key: str,
    findings: Iterable[Diagnostic],
    taken: dict[str, dict[str, str]] | None = None,
) -> dict[str, Decision]:
    """{layer prefix: ("refused", reason)} for the quantized layers of `plan` that a finding
    failing on target `key` names (by its layer, or a tensor of the layer), or that a
    load-blocking file-level finding's formats cover. `taken` (if given) collects the failing
    findings the rules decide per device instead ({prefix: {code: message}})."""
    layers = {prefix: plan.groups[gid] for prefix, gid in plan.rows}
    named, file_level = _index(plan, layers, findings)
    codes: dict[str, dict[str, str]] = {}  # prefix -> {code: message}
    blocking: dict[str, dict[str, str]] = {}  # format -> {code: message}
    fails: dict[object, bool] = {}  # whether a code (with its given effects) fails on `key`

    def failing(d: Diagnostic) -> bool:
        memo = d.code if d.effects is None else (d.code, *d.effects.items())
        hit = fails.get(memo)
        if hit is None:
            hit = fails[memo] = d.effect_at(key) is Effect.FAILS
        return hit

    # a file-level finding (often one loader's) refuses nothing, unless the runtime declares
    # its code load-blocking; a finding on an unquantized layer, nothing
    for d in file_level:
        if d.code in rules.blocking and failing(d):
            for fmt in rules.blocking[d.code]:
                blocking.setdefault(fmt, {}).setdefault(d.code, d.message)
    for prefix, group, d in named:
        if not failing(d):
            continue
        if rules.decides(group[2], group[0], d):
            if taken is not None:
                taken.setdefault(str(prefix), {}).setdefault(d.code, d.message)
            continue
        codes.setdefault(str(prefix), {}).setdefault(d.code, d.message)
    if blocking:
        whole = blocking.get(EVERY, {})
        for prefix, group in layers.items():
            found = blocking.get(group[0])
            if found or whole:
                own = codes.setdefault(prefix, {})
                for code, message in (found or {}).items():
                    own.setdefault(code, f"file-level, blocks every {group[0]} layer: {message}")
                for code, message in whole.items():
                    own.setdefault(code, f"file-level, stops the whole load: {message}")
    return {prefix: ("refused", _reason(key, found)) for prefix, found in codes.items()}


#: the last `_index` (plan, findings, result): every target of a check asks it in a row
_LAST: list[Any] = [None, None, None]


def _index(
    plan: Plan, layers: dict[str, list[Any]], findings: Iterable[Diagnostic]
) -> tuple[list[tuple[str, list[Any], Diagnostic]], list[Diagnostic]]:
    """The findings that name a quantized layer of `plan` (prefix, its group, finding) and
    those that name no layer (file-level). Independent of the target: computed once."""
    if _LAST[0] is plan and _LAST[1] is findings:
        return _LAST[2]  # type: ignore[no-any-return]
    named = []
    file_level = []
    for d in findings:
        prefix = d.layer
        if prefix is None and d.tensor is not None:
            prefix = d.tensor.rpartition(".")[0]
        if prefix is None:
            file_level.append(d)
            continue
        group = layers.get(prefix)
        if group is not None:
            named.append((prefix, group, d))
    _LAST[:] = [plan, findings, (named, file_level)]
    return named, file_level


def _reason(key: str, found: dict[str, str]) -> str:
    """`QC610 fails on comfyui@0271a469 (also QC609): the layer does not load or run on any
    device (the first finding's message)`."""
    first_code, first = next(iter(found.items()))
    more = [c for c in found if c != first_code]
    also = f" (also {', '.join(more)})" if more else ""
    return (
        f"{first_code} fails on {key}{also}: the layer does not load or run on any device ({first})"
    )


def refused_line(key: str, refused: dict[str, Decision]) -> str:
    """The "needs" line when some layers are refused on every device."""
    n = len(refused)
    heads = (r[1].split(": ", 1)[0].replace(",", " ").replace(")", " ") for r in refused.values())
    codes = sorted({w for h in heads for w in h.split() if w.startswith("QC")})
    return (
        f"{key}: {n} quantized layer{'' if n == 1 else 's'} cannot load or run "
        f"({', '.join(codes)}), so no GPU runs every quantized layer natively"
    )
