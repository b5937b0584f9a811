"""Differential tests: InvokeAI's own loader and LoRA code, and what it leaves on every device,
against quantcheck (`make diff-consumers`)."""
