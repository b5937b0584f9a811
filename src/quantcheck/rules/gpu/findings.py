"""Known bad device combinations as findings (issue 24 item 4): QC800-QC803 from
`runtimes/comfyui_gpu.py KNOWN_ISSUES` and `SIZE_LIMIT`. One finding per known issue and
checkpoint, naming every given GPU it concerns (whatever the targets). Standard library
only."""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic
from quantcheck.rules.codes import QC803
from quantcheck.rules.comfyui.gpu import COMFYUI_GPU
from quantcheck.runtimes import comfyui_gpu as data

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from quantcheck.gpus.spec import GpuSpec
    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer

#: runs where it matters: a mode in which the format's own kernel runs
RUNS = ("native", "depends")


def device_matches(issue: data.KnownIssue, spec: GpuSpec) -> bool:
    """Whether `issue` concerns the device `spec` names."""
    return (
        (spec.cc is not None and spec.cc in issue.ccs)
        or (spec.arch is not None and spec.arch in issue.archs)
        or spec.backend in issue.backends
    )


def _is_convrot(fmt: str, layer: Layer) -> bool:
    return fmt == "convrot_w4a4" or bool(layer.marker and layer.marker.get("convrot") is True)


def known_issues(ck: Checkpoint, specs: list[GpuSpec]) -> list[Diagnostic]:
    """The QC800-QC803 findings of checkpoint `ck` on `specs`. They are reports about
    ComfyUI with comfy-kitchen (whose kernels sglang uses too) and change no target's status,
    so they are listed whatever `keys` names."""
    layers: list[tuple[str, str, Layer]] = [
        (prefix, fmt, layer)
        for prefix, layer in ck.layers.items()
        if layer.marker is not None and isinstance(fmt := layer.format, str)
    ]
    if not layers:
        return []
    file = ck.shards[0].name if ck.shards else None
    out = []
    for issue in data.KNOWN_ISSUES:
        hit = [
            (p, f)
            for p, f, layer in layers
            if f in issue.formats and (not issue.convrot_only or _is_convrot(f, layer))
        ]
        if not hit:
            continue
        fmts = sorted({f for _, f in hit})
        gpus = [
            s.given
            for s in specs
            if device_matches(issue, s)
            and any(COMFYUI_GPU.format_decision(f, s)[0] in RUNS for f in fmts)
        ]
        if gpus:
            out.append(
                Diagnostic(
                    issue.code,
                    f"{len(hit)} {'/'.join(fmts)} layer{'s' if len(hit) != 1 else ''} on "
                    f"{', '.join(gpus)}: {issue.what} ({issue.threads})",
                    file=file,
                    data={"gpus": gpus, "formats": fmts, "layers": len(hit)},
                )
            )
    size = _size_limit(layers, specs, file)
    if size is not None:
        out.append(size)
    return out


def _size_limit(
    layers: list[tuple[str, str, Layer]], specs: list[GpuSpec], file: str | None
) -> Diagnostic | None:
    """QC803 for the widest INT8 layer that runs on comfy-kitchen's INT8 kernel on some GPU."""
    gpus = [
        s.given
        for s in specs
        if "comfy-kitchen CUDA" in COMFYUI_GPU.format_decision("int8_tensorwise", s)[1]
    ]
    widest = max(
        (
            (layer.weight.shape[0], prefix)
            for prefix, f, layer in layers
            if f == "int8_tensorwise" and layer.weight is not None and layer.weight.shape
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
        layer=prefix,
        data={"gpus": gpus, "n": n, "tokens": tokens},
    )
