"""The text-heavy sections: header and verdicts, sizes per format, diagnostics by code, and the
table of every layer."""

from __future__ import annotations

from html import escape
from typing import Any

from quantcheck.diagnostics import Diagnostic
from quantcheck.io.source import base_name
from quantcheck.render.grouping import finding_labels
from quantcheck.render.html.colors import STATUS_COLORS, format_color
from quantcheck.render.html.model import LayerView, ReportData
from quantcheck.render.html.svg import bar_svg, meter_svg
from quantcheck.render.html.text import human_bytes, human_count, num, shape
from quantcheck.render.text import loader_choice

_RANK = {"error": 2, "warning": 1, "info": 0}


def bf16_saving(totals: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """(bytes stored, bytes the same weights take in BF16)."""
    stored = sum(t["bytes"] for t in totals.values())
    return stored, sum(2 * t["params"] for t in totals.values())


def header_html(data: ReportData, generated: str, version: str) -> str:
    """Title, inputs, and cards: layers, size, saving against BF16, one verdict per target."""
    files = data.summary["files"]
    names = ", ".join(base_name(f["path"]) for f in files) or "–"
    stored, bf16 = bf16_saving(data.summary["totals"])
    saved = bf16 - stored
    pct = f"{100 * saved / bf16:.0f}%" if bf16 else "–"
    cards = [
        _card(
            "layers",
            f"{len(data.layers):,}",
            f"{sum(f['tensors'] for f in files):,} tensors in {len(files)} file(s)",
        ),
        _card("weights stored", human_bytes(stored), f"{human_count(bf16 / 2)} weights"),
        _card("saved vs BF16", human_bytes(saved), f"{pct} of {human_bytes(bf16)}"),
    ]
    for t in data.report.targets:
        st = data.report.target_status(t)
        detail = f"{st['errors']} blocking · {st['degraded']} degrading"
        detail += "".join(f" · {said}" for said in loader_choice(data.report, t))
        if st.get("verified") is False:
            detail += f" · unverified: {st['unverified']}"
        cards.append(_card(t, st["status"], detail, STATUS_COLORS[st["status"]]))
    inputs = "".join(f"<li><code>{escape(p)}</code></li>" for p in data.inputs)
    flags = f"target {escape(data.target)}" + (" · deep checks" if data.deep else "")
    return (
        f"<header><h1>quantcheck report <span>{escape(names)}</span></h1>"
        f'<div class="cards">{"".join(cards)}</div><details class="inputs"><summary>'
        f"inputs · {flags} · generated {escape(generated)} by quantcheck {escape(version)}"
        f"</summary><ul>{inputs}</ul></details></header>"
    )


def _card(label: str, value: str, detail: str, color: str | None = None) -> str:
    style = f' style="border-top-color:{color};color:{color}"' if color else ""
    cls = "card verdict" if color else "card"
    return (
        f'<div class="{cls}"{style}><div class="lbl">{escape(label)}</div>'
        f'<div class="val">{escape(value)}</div><div class="det">{escape(detail)}</div></div>'
    )


def sizes_html(data: ReportData) -> str:
    """Bytes, weights and bits per weight per format, with each format's share of the bytes."""
    totals = data.summary["totals"]
    stored, bf16 = bf16_saving(totals)
    order = sorted(totals.items(), key=lambda kv: -kv[1]["bytes"])
    top_bpw = max([16.0, *(t["bits_per_weight"] or 0 for _, t in order)])
    rows = []
    for key, t in order:
        color = format_color(key)
        bpw = t["bits_per_weight"] or 0.0
        ratio = f"{16 / bpw:.2f}×" if bpw else "–"
        share = f"{100 * t['bytes'] / stored:.1f}%" if stored else "–"
        rows.append(
            f'<tr><td><span class="sw" style="background:{color}"></span>'
            f'{escape(key)}</td><td class="num">{t["layers"]:,}</td>'
            f'<td class="num">{human_count(t["params"])}</td>'
            f'<td class="num">{human_bytes(t["bytes"])}</td><td class="num">{share}</td>'
            f'<td class="num">{num(t["bits_per_weight"])}</td>'
            f"<td>{meter_svg(bpw, top_bpw, color, 160, mark=16.0)}</td>"
            f'<td class="num">{ratio}</td></tr>'
        )
    bar = bar_svg(
        [(t["bytes"], format_color(k), f"{k}: {human_bytes(t['bytes'])}") for k, t in order], 900
    )
    saved = bf16 - stored
    pct = f" ({100 * saved / bf16:.1f}%)" if bf16 else ""
    return (
        '<section id="sizes"><h2>Size per format</h2>'
        f'<p class="caption">{human_bytes(stored)} of layer weights and their companions; '
        f"the same weights in BF16 take {human_bytes(bf16)}: <b>{human_bytes(saved)} "
        f"saved{pct}</b>. The bar shows each format's share of the bytes; the black mark "
        f"in the bits/weight column is BF16's 16 bits.</p>{bar}"
        '<table class="data"><thead><tr><th>format</th><th>layers</th><th>weights</th>'
        "<th>size</th><th>share</th><th>bits/weight</th><th></th><th>vs BF16</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def diagnostics_html(data: ReportData) -> str:
    """Diagnostics grouped by code, worst severity first; each entry links to its layer."""
    index = data.by_prefix()
    groups: dict[str, list[Diagnostic]] = {}
    for d in data.report.diagnostics:
        groups.setdefault(d.code, []).append(d)
    if not groups:
        return (
            '<section id="diagnostics"><h2>Diagnostics</h2><p class="clean">No problems '
            "found for " + escape(", ".join(data.report.targets)) + ".</p></section>"
        )
    order = sorted(groups, key=lambda c: (-_RANK[groups[c][0].effective_severity.value], c))
    parts = []
    for code in order:
        ds = groups[code]
        first = ds[0]
        sev = first.effective_severity.value
        title = getattr(first.rule, "title", "")
        # runtime names, or the releases a finding affects when the target names releases
        targets = sorted({t for d in ds for t in finding_labels(d, data.report.targets)})
        items = "".join(_diag_item(d, index) for d in ds)
        opened = " open" if len(ds) <= 12 else ""
        parts.append(
            f'<details class="diag"{opened}><summary><span class="pill sev-{sev}">'
            f"{sev}</span> <b>{escape(code)}</b> {escape(first.name)} "
            f'<span class="count">{len(ds)}</span> <span class="title">{escape(title)}'
            f'</span> <span class="targets">{escape(", ".join(targets))}</span>'
            f"</summary><ul>{items}</ul></details>"
        )
    return f'<section id="diagnostics"><h2>Diagnostics by code</h2>{"".join(parts)}</section>'


def _diag_item(d: Diagnostic, index: dict[str, LayerView]) -> str:
    view = index.get(d.layer or "") or index.get((d.tensor or "").rsplit(".", 1)[0])
    where = d.layer or d.tensor or d.file or "file"
    link = (
        f'<a href="#L{view.index}"><code>{escape(where)}</code></a>'
        if view is not None
        else f"<code>{escape(where)}</code>"
    )
    fix = (
        f'<div class="fix">fix ({escape(d.fix.safety.value)}): {escape(d.fix.description)}</div>'
        if d.fix
        else ""
    )
    return f"<li>{link}<div>{escape(d.message)}</div>{fix}</li>"


def layers_table_html(data: ReportData) -> str:
    """Every layer in one collapsed table (searchable with the browser's find)."""
    rows = []
    for la in data.layers:
        r = la.record
        sev = (
            f'<span class="pill sev-{la.severity}">{len(la.diagnostics)}</span>'
            if la.severity
            else ""
        )
        err = f'<td class="num">{num(la.rel_l2)}</td>' if data.compared else ""
        n, k = r["logical_shape"]
        rows.append(
            f'<tr><td><span class="sw" style="background:{format_color(la.format)}">'
            f'</span>{escape(la.format)}</td><td><a href="#L{la.index}"><code>'
            f"{escape(la.prefix)}</code></a></td><td><code>{escape(r['weight']['dtype'])}"
            f'{shape(r["weight"]["shape"])}</code></td><td class="num">{n}×{k}</td>'
            f'<td class="num">{human_bytes(r["bytes"])}</td>'
            f'<td class="num">{num(r["bits_per_weight"])}</td><td>{sev}</td>{err}</tr>'
        )
    err_head = "<th>rel L2</th>" if data.compared else ""
    return (
        f'<section id="layers"><details><summary><h2>All {len(data.layers):,} layers</h2>'
        '</summary><table class="data"><thead><tr><th>format</th><th>layer</th>'
        "<th>weight</th><th>N×K</th><th>size</th><th>bits/weight</th><th>findings</th>"
        f"{err_head}</tr></thead><tbody>{''.join(rows)}</tbody></table></details></section>"
    )


def releases_html(data: ReportData) -> str:
    """Per runtime with several modelled releases: ok / degraded / fails per release and the
    release it needs (empty when no runtime models several)."""
    from quantcheck.results import release_line

    rows = []
    for name, entry in data.report.releases.items():
        cells = "".join(
            f'<td style="color:{STATUS_COLORS[s]}">{escape(s)}</td>'
            for s in entry["statuses"].values()
        )
        head = "".join(f"<th>{escape(r)}</th>" for r in entry["statuses"])
        rows.append(
            f'<table class="data"><thead><tr><th>{escape(name)}</th>{head}</tr></thead>'
            f"<tbody><tr><td>status</td>{cells}</tr></tbody></table>"
            f"<p>{escape(release_line(name, entry))}</p>"
        )
    if not rows:
        return ""
    return '<section id="releases"><h2>Releases</h2>' + "".join(rows) + "</section>"
