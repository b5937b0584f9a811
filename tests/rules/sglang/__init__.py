"""Tests of the sglang rule folder (src/quantcheck/rules/sglang)."""
