"""Differential tests: each sglang release's own marker code against quantcheck (`make
diff-sglang`)."""
