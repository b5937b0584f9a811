"""Human-readable report: problems grouped by file and layer, `help:` lines for fixes."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

from quantcheck.diagnostics import Diagnostic
from quantcheck.render import grouping
from quantcheck.render.style import (
    SEVERITY_STYLE,
    STATUS_STYLE,
    counted,
    paint,
    terminal_width,
    use_color,
    wrap_parts,
)
from quantcheck.results import Report
from quantcheck.runtimes import loaders_of
from quantcheck.textsafe import clean


def render(report: Report, color: bool | None = None, *, show_all: bool = False) -> str:
    return "\n".join(iter_lines(report, color, show_all=show_all))


def iter_lines(
    report: Report,
    color: bool | None = None,
    *,
    show_all: bool = False,
    suppressed: list[Diagnostic] | None = None,
) -> Iterator[str]:
    """The report's lines one at a time (`render` joins them with newlines). Findings repeated
    over layers are grouped and consequences named on their cause (`render.grouping`);
    `show_all` lists every finding under its layer. `suppressed`: the findings a baseline
    took out (the verdicts they would give are shown, marked baselined)."""
    c = use_color() if color is None else color
    diags = report.diagnostics
    shown = 0
    for file, in_file in groupby(diags, key=lambda d: d.file or ""):
        yield paint(clean(file or "(inputs)"), "bold", c)
        if show_all:
            for where, group in groupby(in_file, key=lambda d: d.layer or d.tensor or ""):
                yield "  " + paint(clean(where or "(file)"), "cyan", c)
                for d in group:
                    yield from _finding_lines(report, d, where, d.message, _fix_text(d), (), c)
        else:
            for bucket in grouping.group(in_file, report.targets):
                head, *rest = grouping.heading(bucket[0].wheres)
                yield "  " + paint(clean(head), "cyan", c)
                yield from ("    " + paint(clean(line), "dim", c) for line in rest)
                for e in bucket:
                    shown += 1
                    where = e.wheres[0] if len(e.wheres) == 1 else ""
                    fix = _fix_text(e.first, e.fix_description)
                    yield from _finding_lines(
                        report, e.first, where, e.message, fix, e.consequences, c
                    )
        yield ""
    if not show_all and shown < len(diags):
        n = len(diags)
        note = (
            f"{n:,} findings shown as {shown:,} entr{'y' if shown == 1 else 'ies'} (repeats "
            "over layers grouped, consequences named on their cause); --show-all lists each"
        )
        yield wrap_parts("", note.split(" "), " ", terminal_width())
    for r in report.inputs:
        if "bytes_fetched" in r:
            rev = r.get("revision") or r.get("etag")
            n = r.get("requests", "?")
            yield (
                f"fetched {r['bytes_fetched']:,} of {r['size']:,} bytes in {n} "
                f"request{'' if n == 1 else 's'} from {clean(r['path'])}"
                + (f" at revision {clean(rev)}" if rev else "")
            )
    if report.family.get("keys_of"):  # a family's key test matched (text: only then)
        yield f"family: {clean(str(report.family['summary']))}"
    yield verdict_lines(report, c, suppressed)


def _fix_text(d: Diagnostic, description: str | None = None) -> str:
    if d.fix is None:
        return ""
    return f"{description or d.fix.description} ({d.fix.safety.value} fix)"


def _finding_lines(
    report: Report,
    d: Diagnostic,
    where: str,
    message: str,
    fix: str,
    consequences: tuple[str, ...],
    c: bool,
) -> Iterator[str]:
    """One finding: severity, code, name, message and runtimes; its fix; the consequences
    named on it. `where` is the heading it sits under (empty under a group's heading)."""
    sev = d.effective_severity.value
    tag = paint(f"{sev:<7}", SEVERITY_STYLE[sev], c)
    labels = grouping.finding_labels(d, report.targets)
    targets = f" [{', '.join(labels)}]" if labels else ""
    # tensors inside the layer are named by their suffix in the message already
    at = where or grouping.where_of(d)
    inside = d.tensor and (d.tensor == at or d.tensor.startswith(at + "."))
    tensor = "" if not d.tensor or inside else d.tensor + ": "
    yield f"    {tag} {d.code} {d.name}: {clean(tensor + message)}" + paint(
        clean(targets), "dim", c
    )
    if fix:
        yield f"            help: {clean(fix)}"
    if consequences:
        from quantcheck.rules.codes import rule_of as get_rule

        names = ", ".join(f"{code} {get_rule(code).name}" for code in consequences)
        layers = "layer" if where else "layers"  # under its own layer, or a group's heading
        yield f"            and, following from it on the same {layers}: {names}"


def unsuppressed(report: Report, suppressed: list[Diagnostic] | None) -> Report | None:
    """The report with the findings a baseline suppressed put back (None when there are
    none): the verdicts they would give."""
    if not suppressed:
        return None
    return Report(
        inputs=[],
        diagnostics=[*report.diagnostics, *suppressed],
        targets=report.targets,
        paths=report.paths,
        family=report.family,
    )


def baselined_status(status: str, before: str) -> str:
    """`status`, or the worse `before` (the status without the baseline) marked
    `(baselined)`: suppressing findings only ever improves a status."""
    return status if before == status else f"{before} (baselined)"


def verdict_lines(report: Report, c: bool, suppressed: list[Diagnostic] | None = None) -> str:
    """The closing lines: per-target status and totals. A status that findings suppressed by
    a baseline would make worse is shown as that worse one, marked `(baselined)`."""
    parts = []
    before = unsuppressed(report, suppressed)
    # a runtime with one key says on its line which of its loaders decides; several keys of
    # one runtime say it on lines of their own (`choice_lines`)
    names = [t.partition("@")[0] for t in report.targets]
    for t in report.targets:
        st = report.target_status(t)
        shown = st["status"] if before is None else baselined_status(st["status"], before.status(t))
        shown, _, baselined = shown.partition(" (")
        label = paint(shown, STATUS_STYLE[shown], c)
        bits = [baselined.rstrip(")")] if baselined else []
        if st["errors"]:
            bits.append(f"{st['errors']} blocking")
        if st["degraded"]:
            bits.append(f"{st['degraded']} degrading")
        said = [", ".join(bits)] if bits else []
        if "loader" in st and names.count(t.partition("@")[0]) == 1:
            said += loader_choice(report, t)
        extra = f" ({'; '.join(said)})" if said else ""
        if st.get("verified") is False:
            extra += f" (unverified: {clean(st['unverified'])})"
        parts.append(f"{clean(t)}: {label}{extra}")
    s = report.summary()
    files = s.get("files", 0)
    totals = (
        f"{counted(s['errors'], 'error')}, {counted(s['warnings'], 'warning')}, "
        f"{counted(s['infos'], 'note')} in {counted(files, 'file')}, "
        f"{counted(s.get('layers', 0), 'layer')}"
    )
    others = sum(d.data.get("decides") is False for d in report.diagnostics)
    if others:  # findings of loaders that do not read the file (rules/sglang/loaders.py)
        about = f"({counted(others, 'note')} about sglang loaders that do not read this file)"
        totals = wrap_parts("", [totals, about], " ", terminal_width())
    gpu = ""
    if report.gpu:  # --gpu
        from quantcheck.render.gpu_text import gpu_lines

        gpu = "".join("\n" + line for line in gpu_lines(report))
    return (
        wrap_parts("targets: ", parts, " · ", terminal_width())
        + choice_lines(report, names)
        + loader_lines(report)
        + release_lines(report)
        + gpu
        + ("\n" + totals)
    )


def loader_choice(report: Report, target: str) -> list[str]:
    """What the targets line says of a runtime with several loaders (sglang): which loader
    decides and why, and what each worse one would do (its `loaders` hook,
    `Loaders.choice_said`); [] for any other runtime."""
    chosen, loaders = report.loader_verdicts(target)
    hook = loaders_of(target)
    if chosen is None or hook is None:
        return []
    family = report.paths.get(target, {}).get("loader_family")
    return [clean(p) for p in hook.choice_said(chosen, loaders, family)]


def choice_lines(report: Report, names: list[str]) -> str:
    """For a runtime with several target keys and several loaders (`--target sglang@all`): one
    line per run of keys with the same `loader_choice`."""
    groups: list[tuple[list[str], list[str]]] = []
    for t, name in zip(report.targets, names, strict=True):
        if names.count(name) < 2:
            continue
        said = loader_choice(report, t)
        if not said:
            continue
        if groups and groups[-1][1] == said and groups[-1][0][0].partition("@")[0] == name:
            groups[-1][0].append(t)
        else:
            groups.append(([t], said))
    from quantcheck.runtimes import get_runtime, release_label

    width = terminal_width()
    out = []
    for keys, said in groups:
        name = keys[0].partition("@")[0]
        rels = {k.partition("@")[2] for k in keys}
        head = (
            release_label(name, get_runtime(name).release_names(), rels) if "" not in rels else name
        )
        out.append("\n" + wrap_parts(f"{clean(head)}: ", said, "; ", width))
    return "".join(out)


def loader_lines(report: Report) -> str:
    """Per target whose loaders disagree (sglang's: its `loaders` hook), one line per loader with
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

    width = terminal_width()
    return "".join(
        "\n" + wrap_parts("releases: ", clean(release_line(name, entry)).split(" · "), " · ", width)
        for name, entry in report.releases.items()
    )


def statistics(report: Report) -> str:
    """`--statistics`: how often each code occurred."""
    counts: dict[str, int] = {}
    for d in report.diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        from quantcheck.rules.codes import rule_of as get_rule

        r = get_rule(code)
        rows.append(f"{n:>6}  {code}  {r.name:<34} {r.severity.value}")
    return "\n".join(rows) if rows else "no diagnostics"
