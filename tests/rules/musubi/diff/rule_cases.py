"""What both releases' differential suites share: every rule case written as files, and the
rules `quantcheck explain` maps one of musubi's messages to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from quantcheck.explain.lookup import explain

from ...test_rule_table import CASES


def rule_case_files(tmp_path: Path) -> Iterator[tuple[str, list[Path], dict[str, Any]]]:
    """(label, paths, check options) of every rule case's failing file and twin (the rule
    tables, tests/rules/*cases.py), each written in a folder of its own under `tmp_path`."""
    for case in CASES:
        for side, build in (("case", case.build), ("twin", case.twin)):
            if build is None:
                continue
            folder = tmp_path / f"{case.id}-{side}"
            folder.mkdir()
            yield f"{case.id} {side}", build(folder), case.check_kwargs


def explained(message: str) -> set[str]:
    """The rules `quantcheck explain` maps musubi's message to."""
    text, found = explain(message, as_json=True)
    return set(json.loads(text)["codes"]) if found else set()
