"""Tests of the forge_neo rule folder (src/quantcheck/rules/forge_neo)."""
