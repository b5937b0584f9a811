"""`quantcheck report` for many checkpoints: a folder with `index.html` (one table row per
checkpoint: size, formats, one verdict per runtime, linked to its page) and one self-contained
page per quantized checkpoint (the single-checkpoint report, plus a link back to the index).

A folder rather than one long file: each page stays the size of a single report and a browser
opens only the checkpoint looked at; element ids of the pages cannot collide.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html import escape
from typing import Any

from quantcheck.render.html.colors import STATUS_COLORS
from quantcheck.render.html.page import CSS
from quantcheck.render.inspect_text import human_bytes
from quantcheck.textsafe import redact_url

INDEX = "index.html"
BACK = '<a href="index.html">&larr; All checkpoints</a>'


def page_name(i: int, name: str) -> str:
    """`0001-model.safetensors.html`: numbered (names may repeat), safe characters only."""
    base = re.split(r"[/\\]", redact_url(name).split("?")[0].split("#")[0].rstrip("/"))[-1]
    base = base or "checkpoint"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", base)[:80]
    return f"{i + 1:04d}-{slug}.html"


def build_pages(
    specs: list[Any],
    *,
    target: str = "default",
    deep: bool = False,
    generated: str | None = None,
    gpus: list[Any] | None = None,
) -> dict[str, str]:
    """File name -> HTML for the index and each quantized checkpoint's page (all in memory:
    for tests and small sets; `report` writes `iter_pages` as they come)."""
    return dict(iter_pages(specs, target=target, deep=deep, generated=generated, gpus=gpus))


def iter_pages(
    specs: list[Any],
    *,
    target: str = "default",
    deep: bool = False,
    generated: str | None = None,
    gpus: list[Any] | None = None,
) -> Iterator[tuple[str, str]]:
    """(file name, HTML) of each quantized checkpoint's page, made one at a time, then the
    index. Only the index's small rows are kept between pages, so memory stays at one page
    whatever the number of checkpoints."""
    from quantcheck._version import __version__
    from quantcheck.checking import check_checkpoint
    from quantcheck.many import checkpoint_formats, is_quantized
    from quantcheck.model.checkpoint import InputError, load_checkpoint
    from quantcheck.render.html import collect, render_html

    stamp = generated or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[dict[str, Any]] = []
    targets: tuple[str, ...] = ()
    for i, spec in enumerate(specs):
        row: dict[str, Any] = {
            "name": redact_url(spec.name),
            "page": None,
            "size": None,
            "formats": "",
            "status": {},
            "releases": {},
            "note": "",
        }
        page: tuple[str, str] | None = None
        try:
            with load_checkpoint(spec) as ck:
                report = check_checkpoint(ck, target=target, deep=deep, gpus=gpus)
                targets = report.targets
                row["size"] = sum(s.header.file_size for s in ck.shards)
                if not is_quantized(ck):
                    row["note"] = "not a quantized checkpoint"
                else:
                    row["formats"] = ", ".join(checkpoint_formats(ck)) or "–"
                    row["status"] = {t: report.target_status(t) for t in report.targets}
                    row["releases"] = report.releases
                    html = render_html(collect(ck, report, None, target=target, deep=deep), stamp)
                    row["page"] = page_name(i, spec.name)
                    page = (row["page"], html.replace("<nav>", f"<nav>{BACK}", 1))
        except (InputError, OSError) as exc:
            row["note"] = f"could not read: {exc}"
        rows.append(row)
        if page is not None:
            yield page
    yield INDEX, index_html(rows, targets or ("sglang", "comfyui"), stamp, __version__)


def index_html(
    rows: list[dict[str, Any]], targets: tuple[str, ...], generated: str, version: str
) -> str:
    """The table of checkpoints: one verdict column per target key. Keys with a release
    (`--target sglang@all`) are grouped under their runtime, each column headed by its release,
    and each such runtime gets a `needs` column (the release from which every newer modelled
    one loads the checkpoint)."""
    from quantcheck.render.many import by_release, column_heads

    needs = list(dict.fromkeys(t.partition("@")[0] for t in targets if "@" in t))
    if by_release(targets):
        _, heads = column_heads(targets)
        head = "".join(
            f"<th>{escape(h if '@' in t else t)}</th>" for t, h in zip(targets, heads, strict=True)
        )
    else:
        head = "".join(f"<th>{escape(t)}</th>" for t in targets)
    head += "".join(f"<th>{escape(n)} needs</th>" for n in needs)
    top = ""
    if by_release(targets):
        spans: list[list[Any]] = []  # [runtime or "", columns]
        for t in targets:
            name, at, _ = t.partition("@")
            label = name if at else ""
            if label and spans and spans[-1][0] == label:
                spans[-1][1] += 1
            else:
                spans.append([label, 1])
        top = (
            '<tr><th colspan="3"></th>'
            + "".join(f'<th colspan="{n}">{escape(g)}</th>' for g, n in spans)
            + (f'<th colspan="{len(needs)}"></th>' if needs else "")
            + "</tr>"
        )
    body = []
    counts: dict[str, int] = {}
    for r in rows:
        name = escape(r["name"])
        link = (
            f'<a href="{escape(r["page"])}"><code>{name}</code></a>'
            if r["page"]
            else f"<code>{name}</code>"
        )
        size = human_bytes(r["size"]) if r["size"] is not None else "–"
        if r["status"]:
            cells = "".join(_status_cell(r["status"][t]) for t in targets)
            cells += "".join(_needs_cell(r.get("releases", {}).get(n)) for n in needs)
            worst = max(
                (r["status"][t]["status"] for t in targets), key=("ok", "degraded", "fails").index
            )
        else:
            cells = (
                f'<td colspan="{len(targets) + len(needs)}" class="caption">'
                f"{escape(r['note'])}</td>"
            )
            worst = "not quantized" if r["note"].startswith("not") else "unreadable"
        counts[worst] = counts.get(worst, 0) + 1
        body.append(
            f'<tr><td>{link}</td><td class="num">{size}</td>'
            f"<td>{escape(r['formats'])}</td>{cells}</tr>"
        )
    total = " · ".join(f"{n} {k}" for k, n in counts.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>quantcheck report · {len(rows)} checkpoints</title><style>{CSS}</style>"
        "</head><body><main><header><h1>quantcheck report "
        f'<span>{len(rows)} checkpoints</span></h1><p class="caption">{escape(total)} · '
        f"generated {escape(generated)} by quantcheck {escape(version)}</p></header>"
        '<section id="checkpoints"><h2>Checkpoints</h2><div class="scroll">'
        f'<table class="data"><thead>{top}<tr><th>checkpoint</th><th>size</th><th>formats</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></section>"
        "</main></body></html>\n"
    )


def _needs_cell(entry: dict[str, Any] | None) -> str:
    """`≥ 0.5.20`, or `none` when the newest modelled release does not load the checkpoint
    correctly (the title lists every release's status)."""
    if entry is None:
        return "<td>–</td>"
    text = "none" if entry["needs"] is None else f"≥ {entry['needs']}"
    title = " · ".join(f"{r} {st}" for r, st in entry["statuses"].items())
    return f'<td title="{escape(title)}">{escape(text)}</td>'


def _status_cell(st: dict[str, Any]) -> str:
    color = STATUS_COLORS[st["status"]]
    detail = (
        f" ({st['errors']} blocking, {st['degraded']} degrading)"
        if st["errors"] or st["degraded"]
        else ""
    )
    why = st.get("unverified") if st["status"] != "fails" else None
    if why:  # the verdict rests on a reading not checked against the runtime's own code
        detail += " (unverified)"
    title = f' title="unverified: {escape(why)}"' if why else ""
    return (
        f'<td{title}><span class="pill" style="background:{color}">{escape(st["status"])}</span>'
        f"<small>{escape(detail)}</small></td>"
    )
