"""The rule registry (stable codes) and the rule families that produce diagnostics."""
