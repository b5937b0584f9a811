"""Machine-readable report (schema documented in docs/json-schema.md)."""

from __future__ import annotations

import json

from quantcheck.report import Report
from quantcheck.textsafe import json_safe


def render(report: Report) -> str:
    return json_safe(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
