"""Run the CLI in-process and capture its JSON output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quantcheck.cli.main import main
from rules.sglang.loader_helpers import without_loaders


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """(exit code, parsed stdout JSON or raw text, stderr). `check` runs without sglang's
    loader findings (these tests are about transport: `IGNORE_LOADERS` of
    tests/rules/sglang/loader_helpers.py)."""
    capsys.readouterr()
    code = main(without_loaders(args))
    out, err = capsys.readouterr()
    try:
        doc: Any = json.loads(out)
    except ValueError:
        doc = out
    return code, doc, err


def without_inputs(doc: dict[str, Any]) -> dict[str, Any]:
    """A check document without where its files were: inputs, checkpoint names and paths."""
    out = {k: v for k, v in doc.items() if k != "inputs"}
    if "checkpoints" in out:
        out["checkpoints"] = [
            {k: v for k, v in c.items() if k not in ("name", "paths", "inputs")}
            for c in out["checkpoints"]
        ]
    for key in ("diagnostics", "suppressed"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in d.items() if k != "checkpoint"} for d in out[key]]
    return out


def rename(doc: Any, names: dict[str, str]) -> Any:
    """`doc` with every string found in `names` replaced (file paths → base names)."""
    if isinstance(doc, dict):
        return {k: rename(v, names) for k, v in doc.items()}
    if isinstance(doc, list):
        return [rename(v, names) for v in doc]
    if isinstance(doc, str):
        return names.get(doc, doc)
    return doc
