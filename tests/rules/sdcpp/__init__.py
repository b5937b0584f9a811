"""Tests of the sdcpp rule folder (src/quantcheck/rules/sdcpp)."""
