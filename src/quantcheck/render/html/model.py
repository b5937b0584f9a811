"""The report's data: every layer with its format, size, worst diagnostic and (optionally) its
error against the original, gathered from a checkpoint, a check Report and a compare result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from quantcheck.diagnostics import Diagnostic
from quantcheck.model.checkpoint import Checkpoint
from quantcheck.model.inventory import summarize
from quantcheck.results import Report
from quantcheck.textsafe import redact_url

_RANK = {"error": 2, "warning": 1, "info": 0}


@dataclass
class LayerView:
    """One layer as drawn: `index` names its anchors (`L<index>`, `H<index>`)."""

    index: int
    prefix: str
    format: str
    record: dict[str, Any]
    severity: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    metrics: dict[str, Any] | None = None

    @property
    def rel_l2(self) -> float | None:
        v = self.metrics.get("rel_l2") if self.metrics else None
        return float(v) if isinstance(v, int | float) else None


@dataclass
class ReportData:
    """Everything the page shows."""

    inputs: list[str]
    summary: dict[str, Any]
    layers: list[LayerView]
    report: Report
    target: str = "default"
    deep: bool = False
    compared: bool = False
    compare_problems: list[dict[str, str]] = field(default_factory=list)
    unmapped: list[Diagnostic] = field(default_factory=list)
    #: `report --lora`: the LoRA analysis and this report (`render.lora.LoraReport`)
    lora: Any = None

    def by_prefix(self) -> dict[str, LayerView]:
        return {la.prefix: la for la in self.layers}


def format_key(record: dict[str, Any]) -> str:
    """The format a layer is drawn in; unquantized layers are keyed by their weight dtype."""
    return record["format"] or f"unquantized {record['weight']['dtype']}"


def collect(
    ck: Checkpoint,
    report: Report,
    compare: Any = None,
    *,
    target: str = "default",
    deep: bool = False,
) -> ReportData:
    """Join the inspect summary, the diagnostics and compare rows by layer prefix."""
    summary = summarize(ck)
    layers = [LayerView(i, r["prefix"], format_key(r), r) for i, r in enumerate(summary["layers"])]
    data = ReportData([redact_url(p) for p in ck.inputs], summary, layers, report, target, deep)
    index = data.by_prefix()
    for d in report.diagnostics:
        view = index.get(d.layer or "") or index.get(_tensor_layer(d.tensor))
        if view is None:
            data.unmapped.append(d)
            continue
        view.diagnostics.append(d)
        sev = d.effective_severity.value
        if view.severity is None or _RANK[sev] > _RANK[view.severity]:
            view.severity = sev
    if compare is not None:
        data.compared = True
        data.compare_problems = list(getattr(compare, "problems", []) or [])
        for row in compare.layers:
            view = index.get(row.get("prefix", ""))
            if view is not None:
                view.metrics = row
    return data


def _tensor_layer(tensor: str | None) -> str:
    return tensor.rsplit(".", 1)[0] if tensor and "." in tensor else ""


def worst(layers: list[LayerView], n: int = 20) -> list[LayerView]:
    """The `n` compared layers with the largest relative L2 error (NaN and inf first)."""

    def key(la: LayerView) -> float:
        v = la.rel_l2
        return math.inf if v is None or math.isnan(v) else v

    return sorted((la for la in layers if la.rel_l2 is not None), key=key, reverse=True)[:n]
