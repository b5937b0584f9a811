"""Differential tests: DiffSynth-Studio's own loader, LoRA and device code against quantcheck
(`make diff-consumers`)."""
