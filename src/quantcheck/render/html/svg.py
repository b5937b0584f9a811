"""Inline SVG: the block × kind grid (format map and heat map), bars and the heat legend."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from quantcheck.render.html.colors import (
    MISSING,
    NOT_QUANTIZED,
    NOT_QUANTIZED_STROKE,
    SEVERITY_COLORS,
    LogScale,
    heat_stops,
)
from quantcheck.render.html.layout import Grid, kind_key
from quantcheck.render.html.model import LayerView
from quantcheck.render.html.text import tooltip

_CHAR = 6.4  # px per character of the 11px column labels
_LEFT = 34
_GROUP_GAP = 8


def _columns(kinds: list[str], cw: int) -> list[int]:
    """x offset of each column; a small gap where the kind category changes."""
    xs, x, prev = [], _LEFT, None
    for k in kinds:
        cat = kind_key(k)[0]
        if prev is not None and cat != prev:
            x += _GROUP_GAP
        xs.append(x)
        x += cw
        prev = cat
    return xs


def grid_svg(
    grid: Grid,
    layers: list[LayerView],
    fill: Callable[[LayerView], str],
    anchor: str,
    outline: bool = True,
) -> str:
    """One family as rows of blocks and columns of kinds; each cell has id `<anchor><index>`
    and hover text, and (with `outline`) the layer's worst severity as its border."""
    ncols, nrows = len(grid.kinds), len(grid.blocks)
    small = nrows <= 8
    cw = max(16, min(64 if small else 44, 1120 // max(ncols, 1)))
    ch = 28 if small else 18 if nrows <= 24 else 16 if nrows <= 64 else 12
    xs = _columns(grid.kinds, cw)
    longest = max((len(k) for k in grid.kinds), default=4)
    head = int(min(200, longest * _CHAR * 0.72 + 16))
    width = xs[-1] + cw + int(longest * _CHAR * 0.72) + 8 if xs else _LEFT
    height = head + nrows * ch + 4
    out = [
        f'<svg class="grid" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(grid.label)}">'
    ]
    for x, kind in zip(xs, grid.kinds, strict=True):
        cx, cy = x + cw / 2, head - 6
        out.append(
            f'<text class="col" x="{cx:.1f}" y="{cy}" '
            f'transform="rotate(-45 {cx:.1f} {cy})">{escape(kind)}</text>'
        )
    for r, block in enumerate(grid.blocks):
        y = head + r * ch
        out.append(f'<text class="row" x="{_LEFT - 6}" y="{y + ch / 2 + 4:.0f}">{block}</text>')
        for x, kind in zip(xs, grid.kinds, strict=True):
            i = grid.cells.get((block, kind))
            if i is None:
                out.append(
                    f'<rect class="empty" x="{x + 1}" y="{y + 1}" width="{cw - 2}" '
                    f'height="{ch - 2}" fill="{MISSING}"/>'
                )
                continue
            out.append(_cell(layers[i], x, y, cw, ch, fill(layers[i]), anchor, outline))
    out.append("</svg>")
    return "".join(out)


def _cell(
    la: LayerView, x: int, y: int, cw: int, ch: int, color: str, anchor: str, outline: bool
) -> str:
    dashed = (
        f' stroke="{NOT_QUANTIZED_STROKE}" stroke-width="1" stroke-dasharray="3 2"'
        if color == NOT_QUANTIZED
        else ""
    )
    cls = "c unq" if dashed else "c"
    rect = (
        f'<rect class="{cls}" id="{anchor}{la.index}" x="{x + 1.5 if dashed else x + 1}" '
        f'y="{y + 1.5 if dashed else y + 1}" width="{cw - 3 if dashed else cw - 2}" '
        f'height="{ch - 3 if dashed else ch - 2}" fill="{color}"{dashed}>'
        f"<title>{escape(tooltip(la))}</title></rect>"
    )
    if not outline or la.severity is None:
        return rect
    sev = SEVERITY_COLORS[la.severity]
    inner = (
        f'<rect class="sev" x="{x + 3.5}" y="{y + 3.5}" width="{cw - 7}" height="{ch - 7}" '
        'fill="none" stroke="#fff" stroke-width="1"/>'
        if ch >= 16
        else ""
    )
    return (
        rect + f'<rect class="sev" x="{x + 2}" y="{y + 2}" width="{cw - 4}" height="{ch - 4}"'
        f' fill="none" stroke="{sev}" stroke-width="2"/>{inner}'
    )


def bar_svg(parts: list[tuple[float, str, str]], width: int = 640, height: int = 22) -> str:
    """A stacked horizontal bar of (value, colour, hover text) parts."""
    total = sum(v for v, _, _ in parts) or 1.0
    out = [
        f'<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
    ]
    x = 0.0
    for v, color, label in parts:
        w = width * v / total
        out.append(
            f'<rect x="{x:.2f}" y="0" width="{max(w, 0.5):.2f}" height="{height}" '
            f'fill="{color}"><title>{escape(label)}</title></rect>'
        )
        x += w
    out.append("</svg>")
    return "".join(out)


def meter_svg(
    value: float, maximum: float, color: str, width: int = 160, mark: float | None = None
) -> str:
    """A single bar for a table cell, with an optional reference mark (e.g. 16 bits)."""
    w = width * min(max(value / maximum, 0.0), 1.0) if maximum > 0 else 0.0
    out = [
        f'<svg class="meter" xmlns="http://www.w3.org/2000/svg" width="{width}" height="12" '
        f'viewBox="0 0 {width} 12"><rect x="0" y="2" width="{width}" height="8" '
        f'fill="#eee"/><rect x="0" y="2" width="{w:.1f}" height="8" fill="{color}"/>'
    ]
    if mark is not None and maximum > 0:
        mx = width * min(mark / maximum, 1.0) - 1
        out.append(f'<rect x="{mx:.1f}" y="0" width="2" height="12" fill="#444"/>')
    out.append("</svg>")
    return "".join(out)


def heat_legend_svg(scale: LogScale, label: Callable[[float], str], width: int = 400) -> str:
    """The fixed heat scale as a gradient with its labelled ticks (the same in every report)
    and, under it, a bracket over the range this report's values span, with its end values."""
    stops = heat_stops()
    grad = "".join(
        f'<stop offset="{i / (len(stops) - 1):.3f}" stop-color="{c}"/>' for i, c in enumerate(stops)
    )
    x0 = 24  # room for the first tick's label
    out = [
        f'<svg class="legend-heat" xmlns="http://www.w3.org/2000/svg" width="{width + 2 * x0}" '
        f'height="64" viewBox="0 0 {width + 2 * x0} 64"><defs><linearGradient id="heatgrad">'
        f"{grad}</linearGradient></defs>"
        f'<rect x="{x0}" y="4" width="{width}" height="16" fill="url(#heatgrad)"/>'
    ]
    for tick, name in scale.TICKS:
        tx = x0 + width * scale(tick)
        out.append(
            f'<rect x="{tx - 0.5:.1f}" y="20" width="1" height="4" fill="#444"/>'
            f'<text x="{tx:.1f}" y="35" class="lbl" text-anchor="middle">{escape(name)}</text>'
        )
    if scale.lo is not None and scale.hi is not None:
        a, b = x0 + width * scale(scale.lo), x0 + width * scale(scale.hi)
        b = max(b, a + 2)
        text = f"this report: {label(scale.lo)}" + (
            f" – {label(scale.hi)}" if scale.hi != scale.lo else ""
        )
        anchor = "start" if a < width / 2 else "end"
        tx = a if anchor == "start" else b
        out.append(
            f'<rect class="range" x="{a:.1f}" y="40" width="{b - a:.1f}" height="4" '
            f'fill="#222"/><text x="{tx:.1f}" y="58" class="lbl" '
            f'text-anchor="{anchor}">{escape(text)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
