"""Human-readable report: problems grouped by file and layer, `help:` lines for fixes."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

from quantcheck.render.style import SEVERITY_STYLE, STATUS_STYLE, paint, use_color
from quantcheck.results import Report
from quantcheck.textsafe import clean


def render(report: Report, color: bool | None = None) -> str:
    return "\n".join(iter_lines(report, color))


def iter_lines(report: Report, color: bool | None = None) -> Iterator[str]:
    """The report's lines one at a time (`render` joins them with newlines)."""
    c = use_color() if color is None else color
    diags = report.diagnostics
    for file, in_file in groupby(diags, key=lambda d: d.file or ""):
        yield paint(clean(file or "(inputs)"), "bold", c)
        for where, group in groupby(in_file, key=lambda d: d.layer or d.tensor or ""):
            yield "  " + paint(clean(where or "(file)"), "cyan", c)
            for d in group:
                sev = d.effective_severity.value
                tag = paint(f"{sev:<7}", SEVERITY_STYLE[sev], c)
                labels = d.target_labels(report.targets)
                targets = f" [{', '.join(labels)}]" if labels else ""
                # tensors inside the layer are named by their suffix in the message already
                inside = d.tensor and (d.tensor == where or d.tensor.startswith(where + "."))
                tensor = f"{d.tensor}: " if d.tensor and not inside else ""
                yield (
                    f"    {tag} {d.code} {d.name}: {clean(tensor + d.message)}"
                    + paint(clean(targets), "dim", c)
                )
                if d.fix:
                    yield (
                        f"            help: {clean(d.fix.description)} ({d.fix.safety.value} fix)"
                    )
        yield ""
    for r in report.inputs:
        if "bytes_fetched" in r:
            rev = r.get("revision") or r.get("etag")
            n = r.get("requests", "?")
            yield (
                f"fetched {r['bytes_fetched']:,} of {r['size']:,} bytes in {n} "
                f"request{'' if n == 1 else 's'} from {clean(r['path'])}"
                + (f" at revision {clean(rev)}" if rev else "")
            )
    yield verdict_lines(report, c)


def verdict_lines(report: Report, c: bool) -> str:
    """The closing lines: per-target status and totals."""
    parts = []
    for t in report.targets:
        st = report.target_status(t)
        label = paint(st["status"], STATUS_STYLE[st["status"]], c)
        extra = ""
        if st["errors"] or st["degraded"]:
            bits = []
            if st["errors"]:
                bits.append(f"{st['errors']} blocking")
            if st["degraded"]:
                bits.append(f"{st['degraded']} degrading")
            extra = f" ({', '.join(bits)})"
        parts.append(f"{clean(t)}: {label}{extra}")
    s = report.summary()
    files = s.get("files", 0)
    totals = (
        f"{s['errors']} errors, {s['warnings']} warnings, {s['infos']} notes in "
        f"{files} file{'s' if files != 1 else ''}, {s.get('layers', 0)} layers"
    )
    return (
        "targets: "
        + " · ".join(parts)
        + loader_lines(report)
        + release_lines(report)
        + "\n"
        + totals
    )


def loader_lines(report: Report) -> str:
    """Per target whose loaders disagree (sglang: `sglang_loaders`), one line per loader with
    its status and reason; consecutive targets with the same loaders share their lines."""
    groups: list[tuple[list[str], dict[str, dict[str, str]]]] = []
    for t in report.targets:
        loaders = report.target_status(t).get("loaders")
        if not loaders or len({v["status"] for v in loaders.values()}) < 2:
            continue
        if groups and groups[-1][1] == loaders:
            groups[-1][0].append(t)
        else:
            groups.append(([t], loaders))
    out = []
    for keys, loaders in groups:
        out.append(f"\n{clean(', '.join(keys))} by loader:")
        out.extend(
            f"\n  {clean(name)}: {v['status']}: {clean(v['reason'])}" for name, v in loaders.items()
        )
    return "".join(out)


def release_lines(report: Report) -> str:
    """One line per runtime with several modelled releases: which it needs (empty if none)."""
    from quantcheck.results import release_line

    return "".join(
        "\nreleases: " + clean(release_line(name, entry)) for name, entry in report.releases.items()
    )


def statistics(report: Report) -> str:
    """`--statistics`: how often each code occurred."""
    counts: dict[str, int] = {}
    for d in report.diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        from quantcheck.rules.registry import get_rule

        r = get_rule(code)
        rows.append(f"{n:>6}  {code}  {r.name:<34} {r.severity.value}")
    return "\n".join(rows) if rows else "no diagnostics"
