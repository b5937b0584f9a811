"""Differential tests: InvokeAI's and DiffSynth-Studio's own loader code against quantcheck
(`make diff-consumers`)."""
