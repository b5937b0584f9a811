"""Tests of the sdnext rule folder (src/quantcheck/rules/sdnext)."""
