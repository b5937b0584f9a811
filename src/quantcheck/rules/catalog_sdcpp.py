"""QC7xx: stable-diffusion.cpp's own rules (what it refuses or silently changes)."""

from __future__ import annotations

from quantcheck.rules.rule import Rule

RULES: list[Rule] = []
