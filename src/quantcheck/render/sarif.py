"""SARIF 2.1.0 output for code-scanning tools."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from quantcheck._version import __version__
from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.render.json_out import Stream, iter_dumps
from quantcheck.results import Report
from quantcheck.rules.registry import all_rules

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render(report: Report) -> str:
    return "".join(iter_chunks(report.diagnostics, report.releases, targets=report.targets))


def iter_chunks(
    diagnostics: Iterable[Diagnostic],
    releases: dict[str, Any] | None = None,
    checkpoints: list[dict[str, Any]] | None = None,
    targets: tuple[str, ...] | None = None,
    gpu: list[dict[str, Any]] | None = None,
) -> Iterator[str]:
    """The SARIF document in pieces, one result at a time (`render` joins them); `releases`
    (the per-release verdicts) and `checkpoints` (each checkpoint's status per target key and
    release matrix, when the targets name releases) go into the run's properties; `targets`
    (target keys) limits each result's targets and labels to those runtimes (None: every
    registered one); `gpu` (with `--gpu`: per checkpoint, its GPU entries without the
    per-layer `execution`) goes into the run's properties as `gpu`."""
    rules = list(all_rules().values())
    index = {r.code: i for i, r in enumerate(rules)}
    props: dict[str, Any] = {}
    if releases:
        props["releases"] = releases
    if checkpoints:
        props["checkpoints"] = checkpoints
    if gpu:
        props["gpu"] = gpu
    return iter_dumps(_document(rules, Stream(_results(diagnostics, index, targets)), props))


def _results(
    diagnostics: Iterable[Diagnostic],
    index: dict[str, int],
    targets: tuple[str, ...] | None = None,
) -> Iterator[object]:
    for d in diagnostics:
        loc: dict[str, object] = {}
        if d.file:
            loc["physicalLocation"] = {"artifactLocation": {"uri": artifact_uri(d.file)}}
        name = d.tensor or d.layer
        if name:
            loc["logicalLocations"] = [
                {"name": name, "kind": "member", "fullyQualifiedName": d.pointer or name}
            ]
        yield {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": LEVEL[d.effective_severity.value],
            "message": {"text": d.message},
            "locations": [loc] if loc else [],
            "properties": {
                "targets": d.targets
                if targets is None
                else [k for k in targets if d.effect_at(k) is not Effect.NONE],
                "fix": d.fix.to_json() if d.fix else None,
                # sglang: the loaders that read it where the deciding loader does not, and
                # whether it decides a verdict (rules/sglang/loaders.py `decided`)
                **({"read_by": d.data["read_by"]} if "read_by" in d.data else {}),
                **({"decides": False} if d.data.get("decides") is False else {}),
                **(
                    {"releases": rel, "labels": d.target_labels(targets)}
                    if (rel := d.affected_releases())
                    else {}
                ),
            },
        }


def artifact_uri(location: str) -> str:
    """`location` as the URI reference SARIF wants: a local path percent-encoded byte by byte
    (`my model #1.safetensors` -> `my%20model%20%231.safetensors`; a name that is not UTF-8
    keeps its bytes, `\xff` -> `%FF`); an address keeps its scheme, reserved characters and
    existing escapes, and gets the rest encoded."""
    import os
    from urllib.parse import quote

    if "://" in location:
        return quote(location.encode("utf-8", "surrogateescape"), safe=":/?#[]@!$&'()*+,;=%~")
    return quote(os.fsencode(location.replace(os.sep, "/")), safe="/~")


def _document(rules: list[Any], results: Stream, props: dict[str, Any]) -> dict[str, object]:
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "quantcheck",
                        "version": __version__,
                        "rules": [
                            {
                                "id": r.code,
                                "name": r.name,
                                "shortDescription": {"text": r.title},
                                "fullDescription": {"text": r.checks},
                                "help": {"text": r.doc()},
                                "defaultConfiguration": {"level": LEVEL[r.severity.value]},
                            }
                            for r in rules
                        ],
                    }
                },
                "results": results,
                **({"properties": props} if props else {}),
            }
        ],
    }
