"""GitHub Actions workflow commands: one annotation per diagnostic."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from quantcheck.diagnostics import Diagnostic
from quantcheck.results import Report
from quantcheck.runtimes import loaders_of, runtimes
from quantcheck.textsafe import clean

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.runtimes import Loaders

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _esc(s: str, prop: bool = False) -> str:
    """Control characters escaped (`clean`), then GitHub's own %-encoding of the rest."""
    s = clean(s).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return s.replace(":", "%3A").replace(",", "%2C") if prop else s


def render(report: Report) -> str:
    return "\n".join(iter_lines(report.diagnostics))


def iter_lines(diagnostics: Iterable[Diagnostic]) -> Iterator[str]:
    """One annotation line per diagnostic, made as they are read."""
    for d in diagnostics:
        where = d.layer or d.tensor
        msg = f"{where}: {d.message}" if where else d.message
        if "read_by" in d.data:  # a loader that does not read the file (`Loaders.decided`)
            name, hook = _reader(d.data["read_by"])
            msg += f" [{name} {hook.read_by_text(d.data['read_by'])}]"
        if d.fix:
            msg += f" (fix: {d.fix.description})"
        props = [f"title={_esc(d.code + ' ' + d.name, True)}"]
        if d.file:
            props.insert(0, f"file={_esc(d.file, True)}")
        yield f"::{LEVEL[d.effective_severity.value]} {','.join(props)}::{_esc(msg)}"


def _reader(read_by: list[str]) -> tuple[str, Loaders]:
    """(the runtime, its `loaders` hook) whose loaders a finding's `data["read_by"]` names
    (the first runtime with loaders when it names none)."""
    for rt in runtimes():
        hook = loaders_of(rt.name)
        if hook is not None and set(read_by) <= set(hook.names):
            return rt.name, hook
    raise LookupError(f"no runtime has the loaders {read_by}")


def release_notices(rows: Iterable[tuple[str, str, dict[str, Any]]]) -> Iterator[str]:
    """One notice per checkpoint and runtime with several releases: the release it needs and
    its status on each (`rows`: checkpoint, runtime, release matrix entry)."""
    from quantcheck.results import release_line

    for checkpoint, name, entry in rows:
        title = _esc(f"quantcheck releases: {name}", True)
        yield f"::notice file={_esc(checkpoint, True)},title={title}::" + _esc(
            release_line(name, entry)
        )


def gpu_notices(rows: Iterable[tuple[str, Any]]) -> Iterator[str]:
    """With `--gpu`: per checkpoint (`rows`: checkpoint, its Report), one notice per target and
    GPU (its summary line, as the text report prints it) and one per target for the "needs"
    line and its advice (joined by `; `): the text report's GPU lines, one annotation each."""
    for checkpoint, report in rows:
        where = f"file={_esc(checkpoint, True)}"
        for target, entries in report.gpu.items():
            for entry in entries.values():
                title = _esc(f"quantcheck gpu: {target} on {entry['spec']}", True)
                yield f"::notice {where},title={title}::{_esc(entry['summary'])}"
            needs = report.gpu_needs.get(target)
            if needs:
                lines = [needs["line"], *needs.get("advice_lines", [])]
                title = _esc(f"quantcheck gpu needs: {target}", True)
                yield f"::notice {where},title={title}::{_esc('; '.join(lines))}"
