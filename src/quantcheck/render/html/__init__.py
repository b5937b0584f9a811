"""`quantcheck report`: a self-contained HTML picture of a checkpoint (inline CSS and SVG, no
scripts, no network). Standard library only; `--compare` needs numpy.

    from quantcheck.render.html import build_report
    html = build_report(["model.safetensors"])
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from quantcheck.render.html.model import ReportData, collect
from quantcheck.render.html.page import render_page

__all__ = ["ReportData", "build_report", "collect", "render_html"]


def render_html(data: ReportData, generated: str | None = None) -> str:
    """The document for already-collected data."""
    from quantcheck._version import __version__

    stamp = generated or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return render_page(data, stamp, __version__)


def build_report(
    paths: Any,
    *,
    compare: Any = None,
    target: str = "default",
    deep: bool = False,
    generated: str | None = None,
    gpus: list[Any] | None = None,
    lora: list[Any] | None = None,
    lora_strength: float = 1.0,
) -> str:
    """Open `paths` (a resolved `CheckpointSpec`, or the shards of one checkpoint), check
    them, and render the report. `compare` is a CompareResult-like
    object (`.layers` rows with prefix and rel_l2, optional `.problems`) or None; `gpus`:
    `GpuSpec`s for the GPU section; `lora`: LoRA files for the LoRA section (their findings
    join the report's; the figures read the weights)."""
    from quantcheck.checking import check_checkpoint
    from quantcheck.model.checkpoint import load_checkpoint

    analysis: list[Any] = []
    with load_checkpoint(paths) as ck:
        report = check_checkpoint(
            ck,
            target=target,
            deep=deep,
            gpus=gpus,
            lora=lora,
            lora_strength=lora_strength,
            lora_numbers=bool(lora),
            lora_analysis=analysis,
        )
        data = collect(ck, report, compare, target=target, deep=deep)
    if analysis:
        from quantcheck.render.lora import LoraReport

        data.lora = LoraReport(analysis[0], report)
    return render_html(data, generated)
