"""The rule families `check` runs after loading, in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from quantcheck.checkpoint import Checkpoint
from quantcheck.diagnostics import Diagnostic

Family = Callable[[Checkpoint], Iterable[Diagnostic]]

FAMILIES: list[Family] = []
