"""The fake runtime's error text (`quantcheck explain`), mapped to its own rule."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, pattern

from .catalog import RULE

PATTERNS: list[MessagePattern] = [
    pattern(
        "FakeRT cannot run nvfp4 layer {tensor!r}",
        RULE,
        "no NVFP4 kernels",
        runtime="FakeRT 1.1",
        target="fakert",
    )
]
