"""Tests of the musubi rule folder (src/quantcheck/rules/musubi)."""
