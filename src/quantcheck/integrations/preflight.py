"""The check a runtime plug-in runs before the weights are read: headers and markers only.

`preflight(paths, target)` runs every rule for one target key and sorts the findings into
*blocking* (the target fails to load the file) and *warnings* (it loads, but computes
something else, runs a format emulated, or erases a LoRA); `blocking_error` is the one message
that lists every blocking problem with its code and fix, `warning_lines` the rest.

GPU and LoRA: `quantcheck.check` takes them when the GPU and LoRA dimensions are on main (the
keywords `gpu=` and `lora=`); until then `preflight` says in `Preflight.notes` what it could
not pass on, and the findings are those of the target alone (`accepted_keywords`).
"""

from __future__ import annotations

import inspect
import shlex

import quantcheck
from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.render import grouping
from quantcheck.results import Report
from quantcheck.textsafe import clean

#: how many layers a problem names before it says how many more there are
NAMED_LAYERS = 3


class Preflight:
    """The outcome of one pre-load check."""

    __slots__ = ("blocking", "emulated", "notes", "paths", "report", "target", "warnings")

    def __init__(
        self,
        paths: list[str],
        target: str,
        report: Report,
        notes: list[str],
        emulated: dict[str, tuple[int, str]] | None = None,
        loader: str | None = None,
    ):
        self.paths = paths
        self.target = target
        self.report = report
        self.notes = notes
        #: format -> (how many layers use it, why the runtime's device emulates it)
        self.emulated = emulated or {}
        # `loader`: the runtime's loader that is reading the file (sglang: rules/sglang/
        # loaders.py); findings that name only other loaders do not concern it. Without it,
        # the findings of the loader that decides the target's verdict (as `check` says)
        mine = [
            d
            for d in report.diagnostics
            if (loader is None and report.decides(d, target))
            or (loader is not None and ("loaders" not in d.data or loader in d.data["loaders"]))
        ]
        self.blocking = [d for d in mine if d.effect_at(target) is Effect.FAILS]
        self.warnings = [d for d in mine if d.effect_at(target) is Effect.DEGRADED]

    @property
    def passed(self) -> bool:
        return not self.blocking

    @property
    def status(self) -> str:
        return str(self.report.status(self.target))

    def summary(self) -> str:
        """One line: file, target, status and counts."""
        names = ", ".join(_base(p) for p in self.paths)
        if self.blocking:
            state = f"FAILS to load ({_count(self.blocking)})"
        elif self.warnings:
            state = f"loads, with {_count(self.warnings, 'warning')}"
        else:
            state = "ok"
        if self.emulated and not self.blocking:
            n = sum(count for count, _ in self.emulated.values())
            state += f" ({n} layer{'' if n == 1 else 's'} emulated: {', '.join(self.emulated)})"
        return clean(f"{names} on {self.target}: {state}")


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _count(diags: list[Diagnostic], word: str = "problem") -> str:
    n = len(_entries(diags, ""))
    return f"{n} {word}{'' if n == 1 else 's'}"


def accepted_keywords() -> set[str]:
    """The keywords `quantcheck.check` takes (the GPU/LoRA seam: `gpu`, `lora` once merged)."""
    return set(inspect.signature(quantcheck.check).parameters)


def preflight(
    paths: list[str],
    target: str,
    *,
    gpu: str | None = None,
    lora: str | None = None,
    emulated: dict[str, str] | None = None,
    loader: str | None = None,
) -> Preflight:
    """Check `paths` (one checkpoint: a file or its shards) for target key `target`; `gpu` and
    `lora` go to `quantcheck.check` when it takes them (else a note says they were not
    checked). `emulated`: the formats the runtime's device runs emulated, with why (as the
    running runtime reports them); the layers using them are counted from the markers.
    `loader`: the loader of the runtime that reads the file, when it is known (sglang's
    marker inspector hook: a loader that reads the markers); findings of its other loaders
    are then left out. Without it, the loader that decides `check`'s verdict is the one.
    Raises `quantcheck.errors.InputError` when the file cannot be read."""
    kwargs: dict[str, str] = {}
    notes: list[str] = []
    accepted = accepted_keywords()
    for name, value in (("gpu", gpu), ("lora", lora)):
        if value is None:
            continue
        if name in accepted:
            kwargs[name] = value
        else:
            notes.append(
                f"{name} {value!r} not checked: this quantcheck has no {name} dimension yet"
            )
    report = quantcheck.check(list(paths), target=target, **kwargs)  # type: ignore[arg-type]
    pf = Preflight(list(paths), target, report, notes, loader=loader)
    if emulated:
        broken = {d.layer for d in [*pf.blocking, *pf.warnings] if d.layer}
        pf.emulated = _emulated_layers(paths, emulated, broken)
    return pf


def _emulated_layers(
    paths: list[str], emulated: dict[str, str], broken: set[str]
) -> dict[str, tuple[int, str]]:
    """format -> (layers whose marker names it, why) for the formats in `emulated`; layers in
    `broken` (a finding says they do not load or compute as their marker says) not counted."""
    counts: dict[str, int] = {}
    with quantcheck.load(list(paths)) as ck:
        for prefix, layer in ck.layers.items():
            fmt = layer.marker.format if layer.marker is not None else None
            if isinstance(fmt, str) and fmt in emulated and prefix not in broken:
                counts[fmt] = counts.get(fmt, 0) + 1
    return {fmt: (n, emulated[fmt]) for fmt, n in sorted(counts.items())}


def _entries(diags: list[Diagnostic], target: str) -> list[grouping.Entry]:
    keys = (target,) if target else ()
    return [e for bucket in grouping.group(diags, keys) for e in bucket]


def _problem_lines(diags: list[Diagnostic], target: str) -> list[str]:
    out = []
    for e in _entries(diags, target):
        d = e.first
        where = [w for w in e.wheres if w] or [d.file or ""]
        named = ", ".join(where[:NAMED_LAYERS])
        if len(where) > NAMED_LAYERS:
            named += f" and {len(where) - NAMED_LAYERS} more"
        out.append(f"  {d.code} {d.name} ({named}): {e.message}")
        if d.fix is not None:
            desc = e.fix_description or d.fix.description
            out.append(f"      fix: {desc} ({d.fix.safety.value} fix)")
    return [clean(line) for line in out]


def blocking_error(pf: Preflight, runtime_name: str, note: str = "") -> str:
    """The one error text for a file `runtime_name` will not load: every problem (grouped over
    layers), with its code and fix, and the commands that show or repair it."""
    names = " ".join(shlex.quote(p) for p in pf.paths)
    head = clean(
        f"quantcheck: {', '.join(_base(p) for p in pf.paths)} will not load in "
        f"{runtime_name} (target {pf.target}): {_count(pf.blocking)}"
        + (f" [{note}]" if note else "")
    )
    tail = [
        clean(f"full report: quantcheck check {names} --target {pf.target}"),
        clean(f"repair: quantcheck fix {names} --target {pf.target} -o FIXED.safetensors"),
    ]
    return "\n".join([head, *_problem_lines(pf.blocking, pf.target), *tail])


def warning_lines(pf: Preflight) -> list[str]:
    """What loads but deserves a warning (degraded layers, emulated formats, erased LoRA),
    and what could not be checked."""
    return [*_problem_lines(pf.warnings, pf.target), *_device_lines(pf)]


def _device_lines(pf: Preflight) -> list[str]:
    """The emulated formats, then what could not be checked."""
    lines = [
        f"{n} layer{'' if n == 1 else 's'} in {fmt} run emulated ({why}): dequantized on "
        "every forward, so no speed-up over 16-bit weights (they stay small in memory)"
        for fmt, (n, why) in pf.emulated.items()
    ]
    return [clean(line) for line in [*lines, *pf.notes]]


def report_text(pf: Preflight) -> str:
    """The text report (`quantcheck check` without colour), emulated formats and notes last."""
    from quantcheck.render.text import render

    return "\n".join([render(pf.report, color=False), *_device_lines(pf)])
