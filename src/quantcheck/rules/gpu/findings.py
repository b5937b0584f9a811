"""Known bad device combinations as findings (issue 24 item 4): QC800-QC803 from
`runtimes/comfyui_gpu.py KNOWN_ISSUES` and `SIZE_LIMIT`. One finding per known issue and
checkpoint, naming every given GPU it concerns (whatever the targets). Looked up per layer
signature (`rules/gpu/plan.Plan`), not per layer. Whether comfy-kitchen's kernel runs on a
device is asked of its decisions in ComfyUI's order (`rules/gpu/kitchen.py`, the defaults
`rules/comfyui/gpu.py` uses as they are). Standard library only."""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic
from quantcheck.rules.codes import QC803
from quantcheck.rules.gpu.kitchen import KitchenGpu
from quantcheck.runtimes import comfyui_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.layers import Layer
    from quantcheck.rules.gpu.plan import Plan

#: runs where it matters: a mode in which the format's own kernel runs
RUNS = ("native", "depends")
#: comfy-kitchen behind ComfyUI's gates and switches (the known issues are its kernels')
KITCHEN = KitchenGpu()


def device_matches(issue: data.KnownIssue, spec: GpuSpec) -> bool:
    """Whether `issue` concerns the device `spec` names."""
    return (
        (spec.cc is not None and spec.cc in issue.ccs)
        or (spec.arch is not None and spec.arch in issue.archs)
        or spec.backend in issue.backends
    )


def _is_convrot(fmt: str, layer: Layer) -> bool:
    return fmt == "convrot_w4a4" or bool(layer.marker and layer.marker.get("convrot") is True)


def known_issues(plan: Plan, specs: list[GpuSpec], file: str | None) -> list[Diagnostic]:
    """The QC800-QC803 findings of the checkpoint `plan` describes, on `specs`. They are
    reports about ComfyUI with comfy-kitchen (whose kernels sglang uses too) and change no
    target's status, so they are listed whatever the targets; `file` is the one they name."""
    groups = plan.groups  # [format, prefix, layer, count, dims] per signature
    out = []
    for issue in data.KNOWN_ISSUES:
        hit = [
            g
            for g in groups
            if g[0] in issue.formats and (not issue.convrot_only or _is_convrot(g[0], g[2]))
        ]
        if not hit:
            continue
        fmts = sorted({g[0] for g in hit})
        n = sum(g[3] for g in hit)
        gpus = [
            s.given
            for s in specs
            if device_matches(issue, s)
            and any(KITCHEN.format_decision(f, s)[0] in RUNS for f in fmts)
        ]
        if gpus:
            out.append(
                Diagnostic(
                    issue.code,
                    f"{n} {'/'.join(fmts)} layer{'s' if n != 1 else ''} on "
                    f"{', '.join(gpus)}: {issue.what} ({issue.threads})",
                    file=file,
                    data={"gpus": gpus, "formats": fmts, "layers": n},
                )
            )
    size = _size_limit(groups, specs, file)
    if size is not None:
        out.append(size)
    return out


def _size_limit(
    groups: list[list[object]], specs: list[GpuSpec], file: str | None
) -> Diagnostic | None:
    """QC803 for the widest INT8 layer that runs on comfy-kitchen's INT8 kernel on some GPU."""
    gpus = [
        s.given
        for s in specs
        if "comfy-kitchen CUDA" in KITCHEN.format_decision("int8_tensorwise", s)[1]
    ]
    widest = max(
        (
            (g[4][0], g[1])  # type: ignore[index]
            for g in groups
            if g[0] == "int8_tensorwise" and g[4] is not None
        ),
        default=None,
    )
    if not gpus or widest is None:
        return None
    n, prefix = widest
    tokens = -(-data.SIZE_LIMIT // n)
    return Diagnostic(
        QC803,
        f"widest INT8 layer N={n}: comfy-kitchen's INT8 GEMM faults from {tokens:,} tokens per "
        f"call (tokens x N >= 2**31) on {', '.join(gpus)} ({data.SIZE_THREAD})",
        file=file,
        layer=str(prefix),
        data={"gpus": gpus, "n": n, "tokens": tokens},
    )
