"""The HTML document: inline CSS, navigation, and the sections in reading order."""

from __future__ import annotations

from html import escape

from quantcheck.io.source import base_name
from quantcheck.render.html.gpu import gpu_html
from quantcheck.render.html.layout import build_layout
from quantcheck.render.html.maps import format_map_html, heat_map_html
from quantcheck.render.html.model import ReportData
from quantcheck.render.html.sections import (
    diagnostics_html,
    header_html,
    layers_table_html,
    releases_html,
    sizes_html,
)

CSS = """
:root{--fg:#1f2328;--mute:#656d76;--line:#d8dee4;--bg:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1360px;margin:0 auto;padding:18px 24px 48px}
header h1{font-size:22px;margin:4px 0 14px}header h1 span{color:var(--mute);font-weight:400}
nav{position:sticky;top:0;z-index:2;background:#24292f;padding:8px 24px}
nav a{color:#fff;margin-right:18px;text-decoration:none;font-weight:600}
nav a:hover{text-decoration:underline}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:10px}
.card{background:#fff;border:1px solid var(--line);border-top:4px solid #8c959f;
border-radius:6px;padding:10px 16px;min-width:170px}
.card .lbl{font-size:12px;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}
.card .val{font-size:24px;font-weight:700}.card .det{font-size:12px;color:var(--mute)}
.card.verdict .val{text-transform:uppercase}
section{background:#fff;border:1px solid var(--line);border-radius:6px;padding:14px 20px;
margin:16px 0}
h2{font-size:18px;margin:0 0 6px}h3{font-size:15px;margin:16px 0 4px}
h3 small,.legend small,.caption{color:var(--mute);font-weight:400}
.caption{margin:0 0 10px}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:6px 0 4px;padding:8px 10px;
background:var(--bg);border-radius:6px}
.key{display:inline-flex;align-items:center;gap:6px;white-space:nowrap}
.sw{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:-2px;
margin-right:6px;border:1px solid rgba(0,0,0,.12)}
.sw.outline{background:#fff;border:3px solid}
.sw.unq{background:#fff;border:1px dashed #8c8c8c}
.sev-error{outline:3px solid #d1242f}.sev-warning{outline:3px solid #e08600}
.sev-info{outline:3px solid #1f6feb}
.scroll{overflow-x:auto}
svg.grid text{font:11px system-ui,-apple-system,"DejaVu Sans",sans-serif;fill:#444}
svg.grid text.row{text-anchor:end;fill:var(--mute)}
svg.grid rect.c:hover{stroke:#111;stroke-width:2}
svg.grid rect.c:target{stroke:#000;stroke-width:4}
svg.grid rect.sev{pointer-events:none}
svg text.lbl{font:12px system-ui,"DejaVu Sans",sans-serif;fill:#444}
svg.bar{display:block;margin:6px 0 10px;border-radius:4px}
ul.flat{list-style:none;padding:0;margin:4px 0;columns:2 520px;column-gap:24px}
ul.flat li{padding:1px 4px;break-inside:avoid;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}
ul.flat li .sw{width:22px}ul.flat .meta{color:var(--mute);margin-left:8px;font-size:12px}
li:target,tr:target{background:#fff3b0}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
table.data{border-collapse:collapse;margin:8px 0;width:auto}
table.data th{text-align:left;font-size:12px;color:var(--mute);font-weight:600;
border-bottom:1px solid var(--line);padding:4px 10px}
table.data td{padding:3px 10px;border-bottom:1px solid #eef1f4;vertical-align:middle}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;
color:#fff;outline:none}
.pill.sev-error{background:#d1242f}.pill.sev-warning{background:#e08600}
.pill.sev-info{background:#1f6feb}
details.diag{border:1px solid var(--line);border-radius:6px;margin:8px 0;padding:6px 12px}
details.diag summary{cursor:pointer}
details.diag .count{background:var(--bg);border:1px solid var(--line);border-radius:10px;
padding:0 7px;font-size:12px}
details.diag .title{color:var(--mute)}details.diag .targets{float:right;color:var(--mute);
font-size:12px}
details.diag ul{margin:6px 0 2px;padding-left:18px}details.diag li{margin:4px 0}
.fix{color:#1a7f37;font-size:13px}
.clean{color:#1a7f37;font-weight:600}
#layers summary h2{display:inline}
.lora-bar span{display:inline-block;width:16em}
details.inputs{color:var(--mute);font-size:12px}
"""


def render_page(data: ReportData, generated: str, version: str) -> str:
    """The whole self-contained document."""
    layout = build_layout([la.prefix for la in data.layers])
    nav = [("format-map", "Format map"), ("sizes", "Sizes"), ("diagnostics", "Diagnostics")]
    if data.compared:
        nav.append(("compare", "Error"))
    gpu = gpu_html(data)
    if gpu:
        nav.append(("gpu", "GPUs"))
    lora = ""
    if data.lora is not None:
        from quantcheck.render.lora import html_section

        lora = html_section(data.lora)
        nav.append(("lora", "LoRA"))
    nav.append(("layers", "All layers"))
    links = "".join(f'<a href="#{a}">{t}</a>' for a, t in nav)
    body = [
        header_html(data, generated, version),
        releases_html(data),
        gpu,
        lora,
        format_map_html(layout, data.layers),
        sizes_html(data),
        diagnostics_html(data),
    ]
    if data.compared:
        body.append(heat_map_html(layout, data.layers, data.compare_problems))
    body.append(layers_table_html(data))
    names = ", ".join(base_name(f["path"]) for f in data.summary["files"])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>quantcheck report · {escape(names)}</title><style>{CSS}</style></head>"
        f"<body><nav>{links}</nav><main>{''.join(body)}</main></body></html>\n"
    )
