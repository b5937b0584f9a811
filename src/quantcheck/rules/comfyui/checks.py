"""ComfyUI's own rules (the `checks` hook of its runtime record): what its loader does that the
format table cannot say — the default safetensors loader's dtype table, the release that first
loads each format (QC606-QC610, QC650, QC651; which releases each breaks is release data in
`runtimes/comfyui_releases.py`), and the ConvRot group-size default; and its `paths` hook
(`unverified_json`: a status that rests on a format not read in ComfyUI's own code).

The upstream lines each rule follows are cited in the rule's evidence (`catalog.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from operator import attrgetter, itemgetter

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.formats.table import FORMATS
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.layers import Layer
from quantcheck.rules import codes as R
from quantcheck.rules.layers.kinds import kinds_of
from quantcheck.rules.levels import Effect, Safety
from quantcheck.runtimes import comfyui_releases
from quantcheck.runtimes import effects as _eff
from quantcheck.runtimes.comfyui_releases import (
    FORMAT_SINCE,
    GUESSED,
    LAYER_CODE,
    RELEASES,
    STEP_CODE,
)

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

FAILS, DEGRADED, NONE = Effect.FAILS, Effect.DEGRADED, Effect.NONE
#: Dtypes ComfyUI's DynamicVRAM loader (comfy/utils.py load_safetensors, `_TYPES`) cannot map.
DEFAULT_LOADER_UNREADABLE = frozenset({"F8_E8M0"})
#: ComfyUI's rotation group when a rotated INT8 marker names none (comfy/ops.py ~L1232).
CONVROT_DEFAULT = 256
_ABSENT = object()
_DTYPE = itemgetter(1)  # TensorInfo is a tuple: (name, dtype, ...)
_LAYER_FORMAT = attrgetter("format")  # `Layer.format`: the merged marker's
#: Whether ComfyUI's checks report the step codes (tests may turn it off). They never reach a
#: report for the newest release (no effect there): only `--target comfyui@RELEASE` shows them.
REPORT_STEPS = True


class ComfyuiChecks:
    """ComfyUI's own rules for one checkpoint."""

    def __init__(self, ck: Checkpoint) -> None:
        self.ck = ck

    def file_findings(self) -> Iterator[Diagnostic]:
        yield from _unreadable_dtypes(self.ck)
        if REPORT_STEPS:
            yield from format_steps(self.ck)

    def layer_findings(self, layer: Layer) -> Iterator[Diagnostic]:
        yield from _format_added_later(layer)
        yield from _convrot_default(layer)

    def finish(self, diags: list[Diagnostic]) -> list[Diagnostic]:
        """Every rule's findings, once all have run: layers ComfyUI's key plumbing marks from
        a header entry of another name are judged marked for ComfyUI (`attach.py`, loaded only
        for a checkpoint with a header entry)."""
        if not any(s.origin == "header" for m in self.ck.markers.values() for s in m.sources):
            return diags  # no header entry: nothing is attached under another name
        from quantcheck.rules.comfyui.attach import revise

        return revise(self.ck, diags)


def _unreadable_dtypes(ck: Checkpoint) -> Iterator[Diagnostic]:
    unreadable = DEFAULT_LOADER_UNREADABLE
    if unreadable.isdisjoint(map(_DTYPE, ck.tensors.values())):
        return
    for t in ck.tensors.values():
        if t.dtype not in unreadable:
            continue
        yield Diagnostic(
            R.QC605,
            f"{t.name} is {t.dtype}: ComfyUI's default safetensors loader "
            "(DynamicVRAM, the default on NVIDIA GPUs) has no such dtype and "
            "raises KeyError before any layer is built; with --cpu or "
            "--disable-dynamic-vram it loads",
            file=t.file,
            tensor=t.name,
            effects=_eff(NONE, FAILS),
            fix=Fix(
                f"relabel {t.name} as U8 (same bytes)",
                Safety.SAFE,
                "relabel",
                (("dtype", "U8"),),
            ),
        )


def formats_by_step(
    ck: Checkpoint,
    format_of: Callable[[Layer], object] | None,
    since: dict[str, str],
    step_code: dict[str, str],
) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """({release: {format: layers}}, {release: first file}) for the marked layers whose format
    (`format_of`; None: the merged marker's) a release after the oldest added (`since`:
    format -> release; releases without a code in `step_code` are left out). ComfyUI and its
    ports share it."""
    # (a marked layer with a weight, how many layers it stands for), in checkpoint order
    groups: list[tuple[Layer, int]]
    if format_of is None:  # the merged marker's format: once per layer kind (`layer_kinds`)
        groups = [(k.first, len(k.layers)) for k in kinds_of(ck).kinds if k.marked]
        format_of = _LAYER_FORMAT
    else:  # another view of the marker (a port's): per layer
        groups = [
            (la, 1) for la in ck.layers.values() if la.marker is not None and "weight" in la.tensors
        ]
    # layers and first weight file per format, in the order the formats first appear
    per_format: dict[str, list[Any]] = {}
    for la, n in groups:
        fmt = format_of(la)
        if not isinstance(fmt, str):
            continue
        hit = per_format.get(fmt)
        if hit is None:
            per_format[fmt] = [n, la.tensors["weight"].file]
        else:
            hit[0] += n
    by_step: dict[str, dict[str, int]] = {}
    first: dict[str, str] = {}
    for fmt, (n, file) in per_format.items():
        release = since.get(fmt)
        if release is None or not step_code[release]:
            continue
        by_step.setdefault(release, {})[fmt] = n
        first.setdefault(release, file)
    return by_step, first


def format_steps(ck: Checkpoint) -> Iterator[Diagnostic]:
    """One finding per ComfyUI step the file needs (formats added after the oldest release)."""
    by_step, first = formats_by_step(ck, None, FORMAT_SINCE, STEP_CODE)
    for release, counts in by_step.items():
        n = sum(counts.values())
        what = ", ".join(f"{f} ({c})" for f, c in sorted(counts.items()))
        known = all(f in FORMATS for f in counts)
        yield Diagnostic(
            getattr(R, STEP_CODE[release]),
            f"{n} layer{'s' if n != 1 else ''} use{'' if n != 1 else 's'} {what}: ComfyUI "
            f"loads {'them' if n != 1 else 'it'} from {release} on"
            + ("" if known else " (a format quantcheck does not check yet)"),
            file=first[release],
            data={"release": release, "formats": sorted(counts)},
        )


def _format_added_later(layer: Layer) -> Iterator[Diagnostic]:
    """QC610: a layer whose format a later ComfyUI step added (`LAYER_CODE`); the release data
    says which releases it breaks, the message which release lacks it and which adds it."""
    m = layer.marker
    if m is None or layer.weight is None or not isinstance(m.format, str):
        return
    step = FORMAT_SINCE.get(m.format)
    code = LAYER_CODE.get(step or "")
    if step is None or not code:
        return
    spec = FORMATS.get(m.format)
    guess = " [GUESS]" if step in GUESSED else ""
    fix = None
    if spec is not None and spec.loads_as:
        fix = Fix(
            f'set "format": {json.dumps(spec.loads_as)} (the same tensors; ComfyUI '
            f"{comfyui_releases.before(step)} loads them as {spec.loads_as})",
            Safety.SAFE,
            "set-format",
            (("format", spec.loads_as),),
        )
    tensor = next((s.key for s in reversed(m.sources) if s.origin == "tensor"), None)
    yield Diagnostic(
        getattr(R, code),
        f"ComfyUI up to {comfyui_releases.before(step)} has no {m.format} in QUANT_ALGOS and "
        f"stops at this layer; {step}{guess} adds it",
        file=m.sources[-1].file,
        tensor=tensor,
        layer=layer.prefix,
        fix=fix,
        data={"release": step, "lacking": comfyui_releases.before(step)},
    )


def _convrot_default(layer: Layer) -> Iterator[Diagnostic]:
    m, w = layer.marker, layer.weight
    if (
        m is None
        or w is None
        or m.format != "int8_tensorwise"
        or m.get("convrot") is not True
        or m.get("convrot_groupsize", _ABSENT) is not _ABSENT
        or len(w.shape) != 2
    ):
        return
    k = w.shape[1]
    divides = k % CONVROT_DEFAULT == 0
    yield Diagnostic(
        R.QC320,
        f"rotated int8_tensorwise marker has no convrot_groupsize: ComfyUI rotates "
        f"with {CONVROT_DEFAULT}, "
        + (
            "which is correct only if the weights were rotated with 256"
            if divides
            else f"which does not divide K={k}: the first forward raises"
        ),
        file=m.sources[-1].file,
        layer=layer.prefix,
        effects=_eff(NONE, DEGRADED if divides else FAILS),
        fix=Fix(
            f'add "convrot_groupsize": {CONVROT_DEFAULT} if the weights were rotated with it',
            Safety.DISPLAY,
        ),
    )


def unverified_json(ck: Checkpoint, release: str | None) -> dict[str, Any]:
    """The JSON summary keys of a ComfyUI target at `release` (None: the newest) for `ck`:
    `verified: false` and `unverified` (why) when a layer's format is one whose support there
    rests on a reading that is not ComfyUI's own code (the `paths` hook); {} otherwise."""
    names = [r.name for r in RELEASES]
    upto = RELEASES if release is None else RELEASES[: names.index(release) + 1]
    why = {fmt: text for rel in upto for fmt, text in rel.unverified.items()}
    if not why:
        return {}
    used = {la.marker.format for la in ck.layers.values() if la.marker is not None}
    hits = sorted({text for fmt, text in why.items() if fmt in used})
    return {"verified": False, "unverified": "; ".join(hits)} if hits else {}
