"""Reports for many checkpoints: text sections and a table, JSON (schema_version 3), and SARIF
/ GitHub annotations located at each checkpoint's files.

One checked checkpoint keeps the single-checkpoint text (its table row would repeat its closing
lines); `quiet` prints only the table. SARIF and GitHub output reuse the single-report renderers
on all diagnostics at once, each diagnostic's `file` being the path of the file it is in.
"""

from __future__ import annotations

from quantcheck._version import document_head
from quantcheck.diagnostics import Severity
from quantcheck.render.style import (
    STATUS_STYLE,
    counted,
    paint,
    terminal_width,
    use_color,
    visible_len,
)
from quantcheck.results import Report
from quantcheck.runtimes import default_targets
from quantcheck.textsafe import clean, redact_url

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from quantcheck.diagnostics import Diagnostic
    from quantcheck.many import CheckpointResult

#: The targets a renderer judges when none are given: the default ones (as `check` does).
TARGETS: tuple[str, ...] = default_targets()

#: The check document's version: 2 lists checkpoints, 3 adds the session of issues 20-27 (GPU
#: entries, ...; see docs/json-schema.md).
CHECK_SCHEMA_VERSION = 3
STATUS_RANK = {"ok": 0, "not quantized": 0, "degraded": 1, "fails": 2, "unreadable": 3}
EXTRA_STYLE = {"not quantized": "dim", "unreadable": "red bold"}


def exit_code(results: list[CheckpointResult], fail_on: Severity = Severity.ERROR) -> int:
    """The worst exit code of all checkpoints (2 unreadable, 1 problems, 0 clean)."""
    return max((r.exit_code(fail_on) for r in results), default=0)


def render_text(
    results: list[CheckpointResult],
    targets: tuple[str, ...] = TARGETS,
    *,
    color: bool | None = None,
    quiet: bool = False,
    show_all: bool = False,
) -> str:
    """Sections for checkpoints with problems, then the table and the total line."""
    return "\n".join(iter_text_lines(results, targets, color=color, quiet=quiet, show_all=show_all))


def iter_text_lines(
    results: list[CheckpointResult],
    targets: tuple[str, ...] = TARGETS,
    *,
    color: bool | None = None,
    quiet: bool = False,
    show_all: bool = False,
) -> Iterator[str]:
    """`render_text`'s lines one at a time (none at all for one unreadable checkpoint)."""
    from quantcheck.many import CHECKED, UNREADABLE
    from quantcheck.render.text import iter_lines

    c = use_color() if color is None else color
    if not quiet and len(results) == 1 and results[0].kind == UNREADABLE:
        return  # the error line on stderr says it all
    if not quiet and len(results) == 1 and results[0].kind == CHECKED:
        r = results[0]
        assert r.report is not None
        yield from iter_lines(r.report, color=c, show_all=show_all, suppressed=r.suppressed)
        if suppressed_line(results):
            yield suppressed_line(results)[1:]
        return
    if not quiet:
        for r in results:
            if r.error is not None:
                yield from (
                    paint(f"== {clean(r.name)}", "bold", c),
                    f"  could not read: {clean(r.error)}",
                    "",
                )
            elif r.kind == CHECKED and r.report is not None and r.report.diagnostics:
                yield paint(f"== {clean(r.name)}", "bold", c)
                yield from iter_lines(r.report, color=c, show_all=show_all, suppressed=r.suppressed)
                yield ""
            elif r.kind == CHECKED and r.report is not None and r.report.gpu:
                from quantcheck.render.gpu_text import gpu_lines

                yield paint(f"== {clean(r.name)}", "bold", c)  # clean, but --gpu asked more
                yield from gpu_lines(r.report)
                yield ""
    yield table(results, targets, c, terminal_width())
    yield from unverified_notes(results, targets)
    if not quiet:
        yield total_line(results, targets) + suppressed_line(results)


def table(
    results: list[CheckpointResult],
    targets: tuple[str, ...],
    c: bool,
    width: int | None = None,
) -> str:
    """CHECKPOINT SIZE FORMATS and one status column per target key. Keys with a release
    (`sglang@0.5.19`) get a two-line header: the runtime over its releases' columns, each
    column headed by its release alone (the columns stay as narrow as their statuses).

    When the table is wider than `width` (a terminal's; None: never cut), statuses are
    abbreviated (a legend follows) and the status columns wrap into blocks that each repeat
    the CHECKPOINT column."""
    from quantcheck.many import NOT_QUANTIZED
    from quantcheck.render.inspect_text import human_bytes

    names = [clean(r.name) for r in results]
    meta = [
        [
            human_bytes(r.size) if r.report else "-",
            "not a quantized checkpoint" if r.kind == NOT_QUANTIZED else ",".join(r.formats) or "-",
        ]
        for r in results
    ]
    statuses = [shown_statuses(r, targets) for r in results]
    full = _block(names, meta, statuses, targets, c)
    if width is None or max(map(visible_len, full), default=0) <= width:
        return "\n".join(full)
    short = [[ABBREVIATIONS.get(st, st) for st in row] for row in statuses]
    names = [_cut_middle(n, max(40, width // 3)) for n in names]
    name_w = max(map(len, [*names, "CHECKPOINT"]))
    meta_w = sum(max(map(len, col)) + 2 for col in zip(*meta, ("SIZE", "FORMATS"), strict=True))
    lines: list[str] = []
    i = 0
    while i < len(targets):
        room = width - name_w - (meta_w if i == 0 else 0)
        j = i + 1  # at least one status column per block
        while j < len(targets) and _columns_width(short, targets, i, j + 1) <= room:
            j += 1
        block = [row[i:j] for row in short]
        if lines:
            lines.append("")
        lines += _block(names, meta if i == 0 else None, block, targets[i:j], c)
        i = j
    used = sorted({st for row in statuses for st in row if st in ABBREVIATIONS})
    if used:
        lines.append("legend: " + " · ".join(f"{ABBREVIATIONS[st]} = {st}" for st in used))
    return "\n".join(lines)


#: The short spelling of each status in a table cut to fit a terminal.
ABBREVIATIONS = {
    "degraded": "degr",
    "fails": "FAIL",
    "not quantized": "n/q",
    "unreadable": "unrd",
    "fails (baselined)": "FAIL*",
    "degraded (baselined)": "degr*",
    "ok (unverified)": "ok?",
    "degraded (unverified)": "degr?",
}


def _columns_width(statuses: list[list[str]], targets: tuple[str, ...], i: int, j: int) -> int:
    """The printed width of status columns i..j-1 as one block (each with its two spaces)."""
    groups, heads = column_heads(targets[i:j])
    return sum(
        2 + max(len(g), len(h), *(len(row[n]) for row in statuses))
        for n, g, h in zip(range(i, j), groups, heads, strict=True)
    )


def _block(
    names: list[str],
    meta: list[list[str]] | None,
    statuses: list[list[str]],
    targets: tuple[str, ...],
    c: bool,
) -> list[str]:
    """One table: CHECKPOINT, SIZE and FORMATS (when `meta` is given), the status columns."""
    groups, heads = column_heads(targets)
    lead = ["CHECKPOINT", "SIZE", "FORMATS"] if meta is not None else ["CHECKPOINT"]
    rows = [[*lead, *heads]]
    for n, name in enumerate(names):
        rows.append([name, *(meta[n] if meta is not None else ()), *statuses[n]])
    k = len(lead)
    top = [""] * k + groups if any(groups) else None
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    if top is not None:
        widths = [max(w, len(g)) for w, g in zip(widths, top, strict=True)]
    lines = []
    if top is not None:
        cells = [g.ljust(w) for g, w in zip(top, widths, strict=True)]
        lines.append(paint("  ".join(cells).rstrip(), "bold", c))
    # a status cell depends only on its column and status: each is padded and painted once
    cell: dict[tuple[int, str], str] = {}
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])]
        if meta is not None:
            cells += [row[1].rjust(widths[1]), row[2].ljust(widths[2])]
        for i, st in enumerate(row[k:], start=k):
            text = cell.get((i, st)) if n else None
            if text is None:
                style = "bold" if n == 0 else _status_style(st)
                text = paint(st.ljust(widths[i]), style, c) if style else st.ljust(widths[i])
                if n:
                    cell[i, st] = text
            cells.append(text)
        lines.append("  ".join(cells).rstrip())
    return lines


def _status_style(st: str) -> str:
    full = next((k for k, v in ABBREVIATIONS.items() if v == st), st)
    plain = full.partition(" (")[0]
    return STATUS_STYLE.get(full) or STATUS_STYLE.get(plain) or EXTRA_STYLE.get(full, "")


def _cut_middle(text: str, most: int) -> str:
    """`text` at most `most` characters: its start and its end around `…`."""
    if len(text) <= most:
        return text
    head = most // 3
    return text[:head] + "…" + text[len(text) - (most - head - 1) :]


def shown_statuses(r: CheckpointResult, targets: tuple[str, ...]) -> list[str]:
    """The statuses a table shows: the checkpoint's own, and where a baseline suppressed
    findings that make one worse, that worse status marked `(baselined)` (the exit code
    follows the baseline; the display never hides the verdict)."""
    from quantcheck.render.text import baselined_status, unsuppressed

    own = [r.status(t) for t in targets]
    if r.report is None or r.kind != "checked":
        return own
    own = [_with_unverified(r.report, t, st) for t, st in zip(targets, own, strict=True)]
    before = unsuppressed(r.report, r.suppressed)
    if before is None:
        return own
    return [baselined_status(st, before.status(t)) for st, t in zip(own, targets, strict=True)]


def _with_unverified(report: Report, target: str, status: str) -> str:
    """`ok (unverified)` where the verdict rests on a reading not checked against the
    runtime's own code (the reason goes under the table: `unverified_notes`)."""
    if status == "fails" or not report.paths.get(target, {}).get("unverified"):
        return status
    return f"{status} (unverified)"


def unverified_notes(results: list[CheckpointResult], targets: tuple[str, ...]) -> list[str]:
    """One line per distinct reason a table's `(unverified)` status gives."""
    reasons = {
        why: None
        for r in results
        if r.report is not None
        for t in targets
        if (why := r.report.paths.get(t, {}).get("unverified")) and r.report.status(t) != "fails"
    }
    return [f"unverified: {clean(why)}" for why in reasons]


def column_heads(targets: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(group line, column line) of the status columns: `sglang@0.5.19` is `0.5.19` under a
    `SGLANG` group (named over the first of its consecutive columns); a bare `sglang` is
    `SGLANG` with no group. Without release keys the group line is all empty."""
    groups, heads = [], []
    prev = None
    for t in targets:
        name, at, rel = t.partition("@")
        if at:
            groups.append(name.upper() if name != prev else "")
            heads.append(rel)
            prev = name
        else:
            groups.append("")
            heads.append(name.upper())
            prev = None
    return groups, heads


def worst_status(r: CheckpointResult, targets: tuple[str, ...]) -> str:
    return max((r.status(t) for t in targets), key=STATUS_RANK.__getitem__, default="ok")


def total_line(results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS) -> str:
    """`N checkpoints: a ok, b degraded, … · E errors, W warnings, I notes`."""
    counts: dict[str, int] = {}
    for r in results:
        st = worst_status(r, targets)
        if r.suppressed:  # what the baseline accepted is said, never hidden
            shown = max(
                shown_statuses(r, targets),
                key=lambda s: STATUS_RANK[s.partition(" (")[0]],
                default=st,
            )
            st = shown if shown.endswith("(baselined)") else st
        counts[st] = counts.get(st, 0) + 1
    labels = {
        "ok": "ok",
        "degraded": "degraded",
        "fails": "failing",
        "not quantized": "not quantized",
        "unreadable": "unreadable",
    }
    labels.update({f"{k} (baselined)": f"{v} (baselined)" for k, v in labels.items()})
    parts = [f"{counts[k]} {v}" for k, v in labels.items() if counts.get(k)]
    sev = dict.fromkeys(Severity, 0)
    for r in results:
        if r.report and r.kind == "checked":
            for s, n in r.report.severity_counts().items():
                sev[s] += n
    n = len(results)
    return (
        f"{n} checkpoint{'s' if n != 1 else ''}: {', '.join(parts) or 'none'} · "
        f"{counted(sev[Severity.ERROR], 'error')}, {counted(sev[Severity.WARNING], 'warning')}, "
        f"{counted(sev[Severity.INFO], 'note')}"
    )


def suppressed_line(results: list[CheckpointResult]) -> str:
    n = sum(len(r.suppressed) for r in results)
    return f"\n{n} known finding{'s' if n != 1 else ''} suppressed by the baseline" if n else ""


def check_document(
    results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS
) -> dict[str, Any]:
    """The `check --output-format json` document, schema_version 3: `checkpoints` (one entry
    each, without its diagnostics), then the diagnostics of all of them (each naming its
    `checkpoint`), per-runtime verdicts and totals over all of them."""
    doc = _document(results, targets)
    for key in ("checkpoints", "inputs", "diagnostics", "suppressed"):
        doc[key] = list(doc[key].items)
    return doc


def _entry(r: CheckpointResult) -> dict[str, Any]:
    """`r.to_json()` without making its diagnostics' dicts (they are streamed)."""
    import copy

    from quantcheck.many import CHECKED

    if r.report is None or r.kind != CHECKED or not r.report.diagnostics:
        entry = r.to_json()
    else:
        full = r.report
        shell = copy.copy(r)
        shell.report = Report(
            inputs=full.inputs,
            diagnostics=[],
            targets=full.targets,
            stats=full.stats,
            releases=full.releases,
            paths=full.paths,
            gpu=full.gpu,
            gpu_needs=full.gpu_needs,
            family=full.family,
        )
        entry = shell.to_json()
        entry["targets"] = {t: full.target_status(t) for t in full.targets}
        entry["summary"] = full.summary()
    del entry["diagnostics"]
    return entry


def _diagnostic_dicts(results: list[CheckpointResult], key: str) -> Iterator[dict[str, Any]]:
    """Every checkpoint's diagnostics (or suppressed findings) as JSON dicts, one at a time."""
    from quantcheck.many import CHECKED

    for r in results:
        if key == "suppressed":
            found: list[Diagnostic] = r.suppressed
        elif r.report is not None and r.kind == CHECKED:
            found = r.report.diagnostics
        else:
            continue
        shown = r.report.targets if r.report is not None else None
        for d in found:
            yield {"checkpoint": r.name, **d.to_json(shown)}


def _group_dicts(results: list[CheckpointResult]) -> Iterator[dict[str, Any]]:
    """`--group`: the entries the text report shows, per checkpoint and file (see
    docs/json-schema.md, `groups`)."""
    from itertools import groupby

    from quantcheck.many import CHECKED
    from quantcheck.render.grouping import finding_labels, group, name_patterns

    for r in results:
        if r.report is None or r.kind != CHECKED:
            continue
        for file, in_file in groupby(r.report.diagnostics, key=lambda d: d.file or ""):
            for bucket in group(in_file, r.report.targets):
                for e in bucket:
                    d = e.first
                    yield {
                        "checkpoint": r.name,
                        "file": file or None,
                        "code": d.code,
                        "name": d.name,
                        "severity": d.effective_severity.value,
                        "message": e.message,
                        "count": len(e.wheres),
                        "where": e.wheres,
                        "patterns": name_patterns(e.wheres) if len(e.wheres) > 1 else e.wheres,
                        "targets": finding_labels(d, r.report.targets),
                        "consequences": list(e.consequences),
                    }


def _document(
    results: list[CheckpointResult], targets: tuple[str, ...], group: bool = False
) -> dict[str, Any]:
    """The check document, its arrays as `Stream`s (`diagnostics` and `suppressed` made one
    item at a time); with `group`, also `groups`."""
    from quantcheck.render.json_out import Stream

    checkpoints, inputs = [], []
    for r in results:
        entry = _entry(r)
        entry["suppressed"] = len(r.suppressed)
        inputs += entry["inputs"]
        checkpoints.append(entry)
    diagnostics = Stream(_diagnostic_dicts(results, "diagnostics"))
    suppressed = Stream(_diagnostic_dicts(results, "suppressed"))
    per_target = {}
    for t in targets:
        worst = max((r.status(t) for r in results), key=STATUS_RANK.__getitem__, default="ok")
        per_target[t] = {
            "status": "ok" if worst == "not quantized" else worst,
            "errors": sum(e["targets"].get(t, {}).get("errors", 0) for e in checkpoints),
            "degraded": sum(e["targets"].get(t, {}).get("degraded", 0) for e in checkpoints),
        }
        # the reader that takes the files (sglang's `path`), when every checkpoint agrees
        seen = {e["targets"][t]["path"] for e in checkpoints if "path" in e["targets"].get(t, {})}
        if len(seen) == 1:
            per_target[t]["path"] = seen.pop()
        # `--gpu`: one checkpoint's GPU entries stand for the run (several: per checkpoint)
        if len(checkpoints) == 1 and "gpu" in checkpoints[0]["targets"].get(t, {}):
            per_target[t]["gpu"] = checkpoints[0]["targets"][t]["gpu"]
            per_target[t]["gpu_needs"] = checkpoints[0]["targets"][t]["gpu_needs"]
    kinds = [r.kind for r in results]
    summary: dict[str, int] = {
        "checkpoints": len(results),
        "checked": kinds.count("checked"),
        "not_quantized": kinds.count("not-quantized"),
        "unreadable": kinds.count("unreadable"),
        "errors": 0,
        "warnings": 0,
        "infos": 0,
    }
    for e in checkpoints:
        for k, v in e["summary"].items():
            summary[k] = summary.get(k, 0) + v
    summary["suppressed"] = sum(len(r.suppressed) for r in results)
    merged = merged_releases(results)
    return {
        **document_head("check", CHECK_SCHEMA_VERSION),
        # one `json.dumps` per entry, not one per value (a folder has thousands of entries)
        "checkpoints": Stream(checkpoints),
        "inputs": Stream(inputs),
        "targets": per_target,
        "diagnostics": diagnostics,
        "suppressed": suppressed,
        **({"groups": Stream(_group_dicts(results))} if group else {}),
        "summary": summary,
        **({"releases": merged} if merged else {}),
    }


def render_json(results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS) -> str:
    return "".join(iter_json(results, targets))


def iter_json(
    results: list[CheckpointResult], targets: tuple[str, ...] = TARGETS, *, group: bool = False
) -> Iterator[str]:
    """`render_json` in pieces, one diagnostic at a time; `group` adds `groups`."""
    from quantcheck.render.json_out import iter_dumps

    return iter_dumps(_document(results, targets, group))


def merged_releases(results: list[CheckpointResult]) -> dict[str, Any]:
    """The checked checkpoints' release verdicts as one matrix (worst status per release)."""
    from quantcheck.results import merge_releases

    return merge_releases(
        [r.report.releases for r in results if r.report is not None and r.kind == "checked"]
    )


def located_diagnostics(results: list[CheckpointResult]) -> Iterator[Diagnostic]:
    """Every checked checkpoint's diagnostics for SARIF and GitHub, one copy at a time, each
    `file` the path of the file it is in (each file's path worked out once)."""
    import copy

    for r in results:
        if r.report is None or r.kind != "checked":
            continue
        paths: dict[str | None, str] = {}
        for d in r.report.diagnostics:
            path = paths.get(d.file)
            if path is None:
                where = r.files.get(d.file, d.file) if d.file else r.spec.paths[0]
                path = paths[d.file] = display_path(redact_url(where))
            d2 = copy.copy(d)
            d2.file = path
            yield d2


def display_path(path: str) -> str:
    """A local path relative to the working folder when inside it (code scanning and GitHub
    annotations want repository-relative paths), else as given."""
    import os

    if "://" in path:
        return path
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def render_located(
    results: list[CheckpointResult], fmt: str, targets: tuple[str, ...] = TARGETS
) -> str:
    """`sarif` or `github` output for all checkpoints."""
    return "".join(iter_located(results, fmt, targets))


def iter_located(
    results: list[CheckpointResult], fmt: str, targets: tuple[str, ...] = TARGETS
) -> Iterator[str]:
    """`render_located` in pieces, one diagnostic at a time."""
    if fmt == "sarif":
        from quantcheck.render.sarif import iter_chunks

        return iter_chunks(
            located_diagnostics(results),
            merged_releases(results),
            checkpoint_statuses(results, targets) if by_release(targets) else None,
            targets,
            gpu_properties(results),
        )
    import itertools

    from quantcheck.render.github import gpu_notices, iter_lines, release_notices
    from quantcheck.render.json_out import join_lines

    notices = release_notices(release_rows(results)) if by_release(targets) else iter(())
    gpu = gpu_notices(
        (display_path(redact_url(r.name)), r.report)
        for r in results
        if r.report is not None and r.kind == "checked" and r.report.gpu
    )
    return join_lines(itertools.chain(iter_lines(located_diagnostics(results)), notices, gpu))


def gpu_properties(results: list[CheckpointResult]) -> list[dict[str, Any]]:
    """With `--gpu`: per checked checkpoint, its GPU entries per target (without the per-layer
    `execution`) and the needs lines, for SARIF's run properties (empty without `--gpu`)."""
    out = []
    for r in results:
        if r.report is None or r.kind != "checked" or not r.report.gpu:
            continue
        out.append(
            {
                "checkpoint": display_path(redact_url(r.name)),
                "targets": {
                    t: {g: {k: v for k, v in e.items() if k != "execution"} for g, e in per.items()}
                    for t, per in r.report.gpu.items()
                },
                "needs": r.report.gpu_needs,
            }
        )
    return out


def by_release(targets: tuple[str, ...]) -> bool:
    """Whether the target keys name releases (`sglang@0.5.19`, `sglang@all`): then SARIF and
    GitHub output carry each checkpoint's per-release statuses (not for the default targets,
    whose output stays as it was)."""
    return any("@" in t for t in targets)


def release_rows(results: list[CheckpointResult]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(checkpoint, runtime, release matrix entry) for every checked checkpoint."""
    for r in results:
        if r.report is not None and r.kind == "checked":
            for name, entry in r.report.releases.items():
                yield display_path(redact_url(r.name)), name, entry


def checkpoint_statuses(
    results: list[CheckpointResult], targets: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Per checkpoint: its status per target key and its release matrix (SARIF properties)."""
    return [
        {
            "checkpoint": display_path(redact_url(r.name)),
            "targets": {t: r.status(t) for t in targets},
            "releases": r.report.releases if r.report is not None else {},
        }
        for r in results
    ]
