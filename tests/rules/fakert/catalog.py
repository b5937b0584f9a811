"""The fake runtime's own rule (a code no real rule uses)."""

from __future__ import annotations

from quantcheck.rules.levels import Severity
from quantcheck.rules.rule import Rule, effects

RULE = Rule(
    "QC799",
    "fakert-no-nvfp4",
    Severity.ERROR,
    "nvfp4 layer: FakeRT has no NVFP4 kernels",
    effects(fakert="fails"),
    None,
    "No layer meant for FakeRT is nvfp4.",
    "FakeRT has no NVFP4 kernels and stops loading.",
    '{"format": "nvfp4"}',
    "Requantize the layer for FakeRT.",
    "tests/rules/fakert (a test runtime)",
)
RULES = [RULE]
