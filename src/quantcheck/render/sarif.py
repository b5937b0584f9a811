"""SARIF 2.1.0 output for code-scanning tools."""

from __future__ import annotations

import json

from quantcheck import __version__
from quantcheck.results import Report
from quantcheck.rules.registry import all_rules
from quantcheck.textsafe import json_safe

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render(report: Report) -> str:
    rules = list(all_rules().values())
    index = {r.code: i for i, r in enumerate(rules)}
    results = []
    for d in report.diagnostics:
        loc: dict[str, object] = {}
        if d.file:
            loc["physicalLocation"] = {"artifactLocation": {"uri": d.file}}
        name = d.tensor or d.layer
        if name:
            loc["logicalLocations"] = [{"name": name, "kind": "member",
                                        "fullyQualifiedName": d.pointer or name}]
        results.append({
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": LEVEL[d.effective_severity.value],
            "message": {"text": d.message},
            "locations": [loc] if loc else [],
            "properties": {"targets": d.targets,
                           "fix": d.fix.to_json() if d.fix else None},
        })
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "quantcheck", "version": __version__,
                "rules": [{"id": r.code, "name": r.name,
                           "shortDescription": {"text": r.title},
                           "fullDescription": {"text": r.checks},
                           "help": {"text": r.doc()},
                           "defaultConfiguration": {"level": LEVEL[r.severity.value]}}
                          for r in rules]}},
            "results": results,
            **({"properties": {"releases": report.releases}} if report.releases else {}),
        }],
    }
    return json_safe(json.dumps(doc, indent=2, ensure_ascii=False))
