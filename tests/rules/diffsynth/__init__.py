"""Tests of the diffsynth rule folder (src/quantcheck/rules/diffsynth)."""
