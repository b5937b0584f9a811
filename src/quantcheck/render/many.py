"""Reports for many checkpoints: text sections and a table, JSON (schema_version 2), and SARIF
/ GitHub annotations located at each checkpoint's files.

One checked checkpoint keeps the single-checkpoint text (its table row would repeat its closing
lines); `quiet` prints only the table. SARIF and GitHub output reuse the single-report renderers
on all diagnostics at once, each diagnostic's `file` being the path of the file it is in.
"""

from __future__ import annotations

from quantcheck.diagnostics import TARGETS, Severity
from quantcheck.render.style import STATUS_STYLE, paint, use_color
from quantcheck.results import Report
from quantcheck.textsafe import clean, json_safe, redact_url

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.many import CheckpointResult

#: The check document's version: 2 lists checkpoints (see docs/json-schema.md).
CHECK_SCHEMA_VERSION = 2
STATUS_RANK = {"ok": 0, "not quantized": 0, "degraded": 1, "fails": 2, "unreadable": 3}
EXTRA_STYLE = {"not quantized": "dim", "unreadable": "red bold"}


def exit_code(results: list[CheckpointResult], fail_on: Severity = Severity.ERROR) -> int:
    """The worst exit code of all checkpoints (2 unreadable, 1 problems, 0 clean)."""
    return max((r.exit_code(fail_on) for r in results), default=0)


def render_text(results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS, *,
                color: bool | None = None, quiet: bool = False) -> str:
    """Sections for checkpoints with problems, then the table and the total line."""
    from quantcheck.many import CHECKED, UNREADABLE
    from quantcheck.render.text import render

    c = use_color() if color is None else color
    if not quiet and len(results) == 1 and results[0].kind == UNREADABLE:
        return ""  # the error line on stderr says it all
    if not quiet and len(results) == 1 and results[0].kind == CHECKED:
        r = results[0]
        assert r.report is not None
        return render(r.report, color=c) + suppressed_line(results)
    out: list[str] = []
    if not quiet:
        for r in results:
            if r.error is not None:
                out += [paint(f"== {clean(r.name)}", "bold", c),
                        f"  could not read: {clean(r.error)}", ""]
            elif r.kind == CHECKED and r.report is not None and r.report.diagnostics:
                out += [paint(f"== {clean(r.name)}", "bold", c), render(r.report, color=c), ""]
    out.append(table(results, targets, c))
    if not quiet:
        out.append(total_line(results) + suppressed_line(results))
    return "\n".join(out)


def table(results: list[CheckpointResult], targets: tuple[str, ...], c: bool) -> str:
    """CHECKPOINT SIZE FORMATS and one status column per runtime."""
    from quantcheck.many import NOT_QUANTIZED
    from quantcheck.render.inspect_text import human_bytes

    rows = [["CHECKPOINT", "SIZE", "FORMATS", *(t.upper() for t in targets)]]
    for r in results:
        formats = ("not a quantized checkpoint" if r.kind == NOT_QUANTIZED
                   else ",".join(r.formats) or "-")
        rows.append([clean(r.name), human_bytes(r.size) if r.report else "-", formats,
                     *(r.status(t) for t in targets)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2])]
        for i, st in enumerate(row[3:], start=3):
            style = "bold" if n == 0 else STATUS_STYLE.get(st) or EXTRA_STYLE.get(st, "")
            cells.append(paint(st.ljust(widths[i]), style, c) if style else st.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def worst_status(r: CheckpointResult, targets: tuple[str, ...]) -> str:
    return max((r.status(t) for t in targets), key=STATUS_RANK.__getitem__, default="ok")


def total_line(results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS) -> str:
    """`N checkpoints: a ok, b degraded, … · E errors, W warnings, I notes`."""
    counts: dict[str, int] = {}
    for r in results:
        st = worst_status(r, targets)
        counts[st] = counts.get(st, 0) + 1
    labels = {"ok": "ok", "degraded": "degraded", "fails": "failing",
              "not quantized": "not quantized", "unreadable": "unreadable"}
    parts = [f"{counts[k]} {v}" for k, v in labels.items() if counts.get(k)]
    sev = {s: sum(r.report.count(s) for r in results if r.report and r.kind == "checked")
           for s in Severity}
    n = len(results)
    return (f"{n} checkpoint{'s' if n != 1 else ''}: {', '.join(parts) or 'none'} · "
            f"{sev[Severity.ERROR]} errors, {sev[Severity.WARNING]} warnings, "
            f"{sev[Severity.INFO]} notes")


def suppressed_line(results: list[CheckpointResult]) -> str:
    n = sum(len(r.suppressed) for r in results)
    return f"\n{n} known finding{'s' if n != 1 else ''} suppressed by the baseline" if n else ""


def check_document(results: list[CheckpointResult],
                   targets: tuple[str, ...] = TARGETS) -> dict[str, Any]:
    """The `check --output-format json` document, schema_version 2: `checkpoints` (one entry
    each, without its diagnostics), then the diagnostics of all of them (each naming its
    `checkpoint`), per-runtime verdicts and totals over all of them."""
    checkpoints, inputs = [], []
    diagnostics: list[dict[str, Any]] = []
    suppressed: list[dict[str, Any]] = []
    for r in results:
        entry = r.to_json()
        for key, out in (("diagnostics", diagnostics), ("suppressed", suppressed)):
            out += [{"checkpoint": r.name, **d} for d in entry.pop(key)]
        entry["suppressed"] = len(r.suppressed)
        inputs += entry["inputs"]
        checkpoints.append(entry)
    per_target = {}
    for t in targets:
        worst = max((r.status(t) for r in results), key=STATUS_RANK.__getitem__, default="ok")
        per_target[t] = {
            "status": "ok" if worst == "not quantized" else worst,
            "errors": sum(e["targets"].get(t, {}).get("errors", 0) for e in checkpoints),
            "degraded": sum(e["targets"].get(t, {}).get("degraded", 0) for e in checkpoints)}
    kinds = [r.kind for r in results]
    summary: dict[str, int] = {"checkpoints": len(results), "checked": kinds.count("checked"),
                               "not_quantized": kinds.count("not-quantized"),
                               "unreadable": kinds.count("unreadable"),
                               "errors": 0, "warnings": 0, "infos": 0}
    for e in checkpoints:
        for k, v in e["summary"].items():
            summary[k] = summary.get(k, 0) + v
    summary["suppressed"] = len(suppressed)
    return {"schema_version": CHECK_SCHEMA_VERSION, "tool": "quantcheck", "kind": "check",
            "checkpoints": checkpoints, "inputs": inputs, "targets": per_target,
            "diagnostics": diagnostics, "suppressed": suppressed, "summary": summary}


def render_json(results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS) -> str:
    import json

    return json_safe(json.dumps(check_document(results, targets), indent=2, ensure_ascii=False))


def located_report(results: list[CheckpointResult], targets: tuple[str, ...]) -> Report:
    """All checked checkpoints' diagnostics in one Report, each `file` the path of the file it
    is in (or the checkpoint's first path), for the SARIF and GitHub renderers."""
    import copy

    diags = []
    inputs: list[dict[str, Any]] = []
    for r in results:
        if r.report is None or r.kind != "checked":
            continue
        inputs += r.report.inputs
        for d in r.report.diagnostics:
            d2 = copy.copy(d)
            where = r.files.get(d.file, d.file) if d.file else r.spec.paths[0]
            d2.file = display_path(redact_url(where))
            diags.append(d2)
    from quantcheck.results import merge_releases

    releases = merge_releases([r.report.releases for r in results
                               if r.report is not None and r.kind == "checked"])
    return Report(inputs=inputs, diagnostics=diags, targets=targets, releases=releases)


def display_path(path: str) -> str:
    """A local path relative to the working folder when inside it (code scanning and GitHub
    annotations want repository-relative paths), else as given."""
    import os

    if "://" in path:
        return path
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def render_located(results: list[CheckpointResult], fmt: str,
                   targets: tuple[str, ...] = TARGETS) -> str:
    """`sarif` or `github` output for all checkpoints."""
    from quantcheck.render import get_renderer

    return get_renderer(fmt)(located_report(results, targets))
