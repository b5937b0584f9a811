"""QC7xx: DiffSynth-Studio's own rules (what it refuses or silently changes)."""

from __future__ import annotations

from quantcheck.rules.rule import Rule

RULES: list[Rule] = []
