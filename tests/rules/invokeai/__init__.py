"""Tests of the invokeai rule folder (src/quantcheck/rules/invokeai)."""
