"""Plain-text pieces: sizes, numbers and a layer's hover text (escaped by the caller)."""

from __future__ import annotations

import math
from typing import Any

from quantcheck.render.html.model import LayerView


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_count(n: float) -> str:
    """12_345_678 -> '12.3 M'."""
    for unit, f in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= f:
            return f"{n / f:.1f} {unit}"
    return f"{n:.0f}"


def num(v: Any, digits: int = 3) -> str:
    """A metric for display: floats in short scientific/fixed form, missing as '–'."""
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e4):
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def shape(dims: list[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def tooltip(la: LayerView) -> str:
    """Hover text: prefix, format, weight, logical shape, size, bits/weight, findings, error."""
    r = la.record
    n, k = r["logical_shape"]
    approx = "" if r.get("logical_shape_exact", True) else "≤ "
    lines = [
        la.prefix,
        f"format: {la.format}",
        f"weight: {r['weight']['dtype']}{shape(r['weight']['shape'])}",
        f"logical N×K: {approx}{n}×{k}",
        f"size: {human_bytes(r['bytes'])} · {num(r['bits_per_weight'])} bits/weight",
    ]
    if la.metrics:
        m = la.metrics
        lines.append(
            f"rel L2 {num(m.get('rel_l2'))} · cosine {num(m.get('cosine'), 6)} · "
            f"SNR {num(m.get('snr_db'))} dB · max |err| {num(m.get('max_abs'))}"
        )
    for d in la.diagnostics[:8]:
        lines.append(f"{d.effective_severity.value} {d.code} {d.name}: {d.message}")
    if len(la.diagnostics) > 8:
        lines.append(f"… and {len(la.diagnostics) - 8} more")
    return "\n".join(lines)
