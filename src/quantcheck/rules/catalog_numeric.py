"""QCnumeric: see FAMILIES in registry.py."""

from __future__ import annotations

from quantcheck.rules.registry import Rule

RULES: list[Rule] = []
