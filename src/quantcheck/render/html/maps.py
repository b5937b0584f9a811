"""The format map and the error heat map: one grid per block family, a sorted colour list for
layers outside blocks (or for every layer when the checkpoint is not block-structured)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from html import escape

from quantcheck.render.html.colors import (
    MISSING,
    NOT_QUANTIZED,
    SEVERITY_COLORS,
    LogScale,
    format_color,
    heat_color,
)
from quantcheck.render.html.layout import Layout
from quantcheck.render.html.model import LayerView, worst
from quantcheck.render.html.svg import grid_svg, heat_legend_svg, meter_svg
from quantcheck.render.html.text import num, tooltip


def format_fill(la: LayerView) -> str:
    return format_color(la.format)


def is_quantized(la: LayerView) -> bool:
    return not la.format.startswith("unquantized ")


def heat_fill(scale: LogScale) -> Callable[[LayerView], str]:
    """Heat colour of a compared quantized layer; its own style for a layer kept
    unquantized (never the colour of a small error) and grey for one not compared."""

    def fill(la: LayerView) -> str:
        v = la.rel_l2
        if v is None:
            return MISSING
        return heat_color(scale(v)) if is_quantized(la) else NOT_QUANTIZED

    return fill


def legend_html(layers: list[LayerView]) -> str:
    """Swatches for every format present (most layers first) and the severity outlines."""
    counts = Counter(la.format for la in layers)
    items = [
        f'<span class="key"><span class="sw" style="background:{format_color(f)}"></span>'
        f"{escape(f)} <small>{n}</small></span>"
        for f, n in counts.most_common()
    ]
    sev = Counter(la.severity for la in layers if la.severity)
    for name in ("error", "warning", "info"):
        items.append(
            f'<span class="key"><span class="sw outline" style="border-color:'
            f'{SEVERITY_COLORS[name]}"></span>{name} <small>{sev.get(name, 0)}</small>'
            "</span>"
        )
    return f'<div class="legend">{"".join(items)}</div>'


def flat_list_html(
    ids: list[int],
    layers: list[LayerView],
    fill: Callable[[LayerView], str],
    anchor: str,
    meta: Callable[[LayerView], str],
) -> str:
    """Layers outside any block grid, in the given (sorted) order, with the grid's colours."""
    rows = []
    for i in ids:
        la = layers[i]
        sev = f" sev-{la.severity}" if la.severity and anchor == "L" else ""
        color = fill(la)
        sev += " unq" if color == NOT_QUANTIZED else ""
        rows.append(
            f'<li id="{anchor}{i}" title="{escape(tooltip(la))}"><span class="sw{sev}" '
            f'style="background:{color}"></span><code>{escape(la.prefix)}</code>'
            f'<span class="meta">{escape(meta(la))}</span></li>'
        )
    return f'<ul class="flat">{"".join(rows)}</ul>'


def _grids_html(
    layout: Layout,
    layers: list[LayerView],
    fill: Callable[[LayerView], str],
    anchor: str,
    meta: Callable[[LayerView], str],
    outline: bool,
) -> str:
    parts = []
    for g in layout.grids:
        n = len(g.cells)
        parts.append(
            f'<div class="family"><h3>{escape(g.label)} <small>{escape(g.family)} · '
            f"{len(g.blocks)} blocks × {len(g.kinds)} kinds · {n} layers</small></h3>"
            f'<div class="scroll">{grid_svg(g, layers, fill, anchor, outline)}</div>'
            "</div>"
        )
    if layout.others:
        title = "Layers outside blocks" if layout.grids else "Layers (sorted by name)"
        parts.append(
            f'<div class="family"><h3>{title} <small>{len(layout.others)} layers'
            f"</small></h3>{flat_list_html(layout.others, layers, fill, anchor, meta)}"
            "</div>"
        )
    return "".join(parts)


def _format_meta(la: LayerView) -> str:
    bpw = la.record["bits_per_weight"]
    return f"{la.format} · {num(bpw)} bits/weight" + (f" · {la.severity}" if la.severity else "")


def format_map_html(layout: Layout, layers: list[LayerView]) -> str:
    """The format map section."""
    caption = (
        "Rows are blocks, columns the layer kinds of a block; colour is the format. "
        "Outlined cells have diagnostics. Hover a cell for the layer's details."
        if layout.grids
        else "Not block-structured: every layer, sorted by name, "
        "coloured by format. Hover a row for details."
    )
    grids = _grids_html(layout, layers, format_fill, "L", _format_meta, True)
    return (
        f'<section id="format-map"><h2>Format map</h2><p class="caption">{caption}</p>'
        f"{legend_html(layers)}{grids}</section>"
    )


def heat_map_html(layout: Layout, layers: list[LayerView], problems: list[dict[str, str]]) -> str:
    """The compare section: heat map on the same grid, the 20 worst layers, what failed."""
    compared = sum(la.rel_l2 is not None for la in layers)
    scale = LogScale([v for la in layers if (v := la.rel_l2) is not None and is_quantized(la)])
    unquantized = sum(la.rel_l2 is not None and not is_quantized(la) for la in layers)
    grids = _grids_html(
        layout,
        layers,
        heat_fill(scale),
        "H",
        lambda la: f"rel L2 {num(la.rel_l2)} · {la.format}",
        False,
    )
    parts = [
        f'<section id="compare"><h2>Error against the original</h2><p class="caption">'
        f"Relative L2 error per layer ({compared} of {len(layers)} layers compared), on a "
        "fixed log scale from 10⁻⁴ to 1, the same in every report; the bar under it spans "
        "this report's quantized layers. Same grid as the format map.</p>",
        heat_legend_svg(scale, num),
        '<div class="legend">'
        '<span class="key"><span class="sw unq"></span>not quantized '
        f"<small>{unquantized}</small></span>"
        f'<span class="key"><span class="sw" style="background:{MISSING}"></span>not '
        f"compared <small>{len(layers) - compared}</small></span></div>",
        grids,
        _worst_html(layers, scale),
    ]
    if problems:
        items = "".join(
            f"<li><code>{escape(str(p.get('prefix', '')))}</code>: "
            f"{escape(str(p.get('problem', '')))}</li>"
            for p in problems
        )
        parts.append(
            f'<h3>Not compared <small>{len(problems)}</small></h3><ul class="problems">{items}</ul>'
        )
    parts.append("</section>")
    return "".join(parts)


def _meter_color(la: LayerView, scale: LogScale) -> str:
    return heat_color(scale(la.rel_l2 or 0.0)) if is_quantized(la) else "#b4b4b4"


def _worst_html(layers: list[LayerView], scale: LogScale) -> str:
    rows = []
    for rank, la in enumerate(worst(layers), 1):
        m = la.metrics or {}
        v = la.rel_l2 or 0.0
        rows.append(
            f'<tr><td class="num">{rank}</td><td><a href="#H{la.index}"><code>'
            f'{escape(la.prefix)}</code></a></td><td><span class="sw" style="background:'
            f'{format_color(la.format)}"></span>{escape(la.format)}</td>'
            f'<td class="num">{num(v)}</td><td>'
            f"{meter_svg(scale(v), 1.0, _meter_color(la, scale), 120)}</td>"
            f'<td class="num">{num(m.get("cosine"), 6)}</td>'
            f'<td class="num">{num(m.get("snr_db"))}</td>'
            f'<td class="num">{num(m.get("max_abs"))}</td></tr>'
        )
    if not rows:
        return "<p>No layer could be compared.</p>"
    return (
        '<h3>The 20 worst layers</h3><table class="data"><thead><tr><th>#</th><th>layer</th>'
        "<th>format</th><th>rel L2</th><th></th><th>cosine</th><th>SNR dB</th>"
        f"<th>max |err|</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
