"""Machine-readable output (schema documented in docs/json-schema.md).

Every JSON document quantcheck prints starts with the same three keys: `schema_version`,
`tool` and `kind` (the command that printed it). `envelope` adds them.
"""

from __future__ import annotations

import json

from quantcheck.textsafe import json_safe

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.results import Report

#: Bumped only when a field is removed or changes meaning; adding fields keeps it.
SCHEMA_VERSION = 1


def envelope(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` behind the common keys (`doc`'s own values for them win, so they cannot drift)."""
    return {"schema_version": SCHEMA_VERSION, "tool": "quantcheck", "kind": kind, **doc}


def dumps(kind: str, doc: dict[str, Any]) -> str:
    return json_safe(json.dumps(envelope(kind, doc), indent=2, ensure_ascii=False))


def render(report: Report) -> str:
    """`check --output-format json`."""
    return dumps("check", report.to_json())
