"""Rule cases for the QC4xx numeric deep checks (added with those rules; empty until then).

Each entry is a `RuleCase` (see `_case.py`); use `check_kwargs={"deep": True}` (and
`"read_weights": True` where the rule needs whole weights). `test_rule_table.py` requires one
failing case here for every registered QC4xx code.
"""

from __future__ import annotations

from ._case import RuleCase

CASES: list[RuleCase] = []
