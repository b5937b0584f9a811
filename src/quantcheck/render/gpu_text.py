"""The GPU part of the text report (`check --gpu`): one line per target and GPU, or, for more
than `MATRIX_FROM` GPUs (`--gpu all`), a compact matrix of GPUs by targets; then per target
the "needs >= X" line and its advice."""

from __future__ import annotations

from quantcheck.textsafe import clean

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.results import Report

#: from this many GPUs on, the lines become a matrix
MATRIX_FROM = 4


def gpu_lines(report: Report) -> list[str]:
    """The lines (empty without `--gpu`)."""
    keys = [t for t in report.targets if t in report.gpu]
    if not keys:
        return []
    specs = list(report.gpu[keys[0]])
    out: list[str] = []
    if len(specs) < MATRIX_FROM:
        out += [clean(report.gpu[t][g]["summary"]) for t in keys for g in specs]
    else:
        out += matrix(report.gpu, keys, specs)
    for t in keys:
        needs = report.gpu_needs[t]
        out.append(f"needs: {clean(needs['line'])}")
        out += [f"  {clean(a)}" for a in needs["advice_lines"]]
    return out


def cell(entry: dict[str, Any]) -> str:
    """`all 12 native` / `240 emulated, 12 native` (modes with layers, worst first)."""
    layers = entry["layers"]
    total = sum(layers.values())
    if not total:
        return "-"
    if layers["native"] == total:
        return f"all {total} native"
    order = ("refused", "emulated", "depends", "native")
    return ", ".join(f"{layers[m]} {m}" for m in order if layers[m])


def matrix(gpu: dict[str, dict[str, Any]], keys: list[str], specs: list[str]) -> list[str]:
    """GPUs down, targets across, with the weight memory of the first target."""
    from quantcheck.rules.gpu.entry import size_text

    first = gpu[keys[0]]
    rows = [["GPU", "CLASS", *keys, "WEIGHTS"]]
    for g in specs:
        e = first[g]
        rows.append(
            [
                clean(g),
                clean(e["device"] if e["device"] != g else _title(e)),
                *(cell(gpu[t][g]) for t in keys),
                size_text(e["weight_bytes"]),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _title(entry: dict[str, Any]) -> str:
    """`Ada Lovelace`, `RDNA3`, `Apple Silicon (MPS)` (the class title without its vendor)."""
    title = str(entry["title"])
    return title.split(" ", 1)[1] if title.startswith(("NVIDIA ", "AMD ")) else title
