"""The GPU section of the HTML report (`report --gpu`): per target a GPU x format grid, each
cell the mode of that format's layers on that GPU, then layer counts and weight memory per
GPU, the "needs" line and its advice."""

from __future__ import annotations

from html import escape
from typing import Any

from quantcheck.render.html.model import ReportData

#: cell colours per mode (mixed: some layers of the format fall back)
MODE_COLORS = {
    "native": "#1a7f37",
    "emulated": "#e08600",
    "mixed": "#9a6700",
    "depends": "#0969da",
    "refused": "#d1242f",
}


def _cell(mode: str | None, tally: dict[str, int] | None, mark: str = "") -> str:
    """One grid cell; `mark`: ` (unverified)` or ` [READ]` (the entry's `evidence`)."""
    if mode is None:
        return "<td>–</td>"
    text = mode
    if mode == "mixed" and tally:
        text = ", ".join(f"{n} {m}" for m, n in tally.items())
    text += mark
    return f'<td style="color:{MODE_COLORS.get(mode, "#444")};font-weight:600">{escape(text)}</td>'


def _table(target: str, per_gpu: dict[str, dict[str, Any]]) -> str:
    from quantcheck.rules.gpu.entry import size_text

    formats = list(dict.fromkeys(f for e in per_gpu.values() for f in e["formats"]))
    head = "".join(f"<th>{escape(f)}</th>" for f in formats)
    rows = []
    for g, e in per_gpu.items():
        evidence = e.get("evidence", {})
        cells = "".join(
            _cell(e["formats"].get(f), e["layers_by_format"].get(f), _mark(evidence, f))
            for f in formats
        )
        counts = ", ".join(f"{n} {m}" for m, n in e["layers"].items() if n) or "–"
        issues = ", ".join(dict.fromkeys(k["code"] for k in e["known_issues"])) or ""
        cc = e["compute_capability"]
        where = f"sm_{cc.replace('.', '')}" if cc else e["arch"] or e["backend"]
        label = g if where in g else f"{g} ({where})"
        rows.append(
            f"<tr><td>{escape(label)}</td>{cells}<td>{escape(counts)}</td>"
            f'<td class="num">{size_text(e["weight_bytes"])}</td>'
            f'<td class="num">{size_text(e["peak_extra_bytes"]) if e["peak_extra_bytes"] else "–"}'
            f"</td><td>{escape(issues)}</td></tr>"
        )
    return (
        f"<h3>{escape(target)}</h3>"
        f'<table class="data"><thead><tr><th>GPU</th>{head}<th>layers</th><th>weights</th>'
        f"<th>transient</th><th>known issues</th></tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>"
    )


def _mark(evidence: dict[str, list[str]], fmt: str) -> str:
    if fmt in evidence.get("unverified", ()):
        return " (unverified)"
    return " [READ]" if fmt in evidence.get("read", ()) else ""


def gpu_html(data: ReportData) -> str:
    """The section (empty without `--gpu`)."""
    report = data.report
    keys = [t for t in report.targets if t in report.gpu]
    if not keys:
        return ""
    parts = []
    for t in keys:
        parts.append(_table(t, report.gpu[t]))
        needs = report.gpu_needs[t]
        lines = [needs["line"], *needs["advice_lines"]]
        parts.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>")
    return (
        '<section id="gpu"><h2>GPUs</h2><p class="caption">How each format\'s layers run on '
        "each GPU: native (its own kernel), emulated (dequantized every step: slower than "
        "BF16), depends (on the batch of tokens), refused (does not load or run); "
        "(unverified): the verdict rests on a guess, [READ]: on upstream code read, not run. "
        "Weights as the "
        "runtime holds them; activations are not included.</p>" + "".join(parts) + "</section>"
    )
