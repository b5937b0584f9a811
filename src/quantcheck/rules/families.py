"""The rule families `check` runs after loading, in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from quantcheck.checkpoint import Checkpoint
from quantcheck.diagnostics import Diagnostic
from quantcheck.rules.layer_rules import check_layers
from quantcheck.rules.marker_rules import check_markers
from quantcheck.rules.runtime_rules import check_runtime

Family = Callable[[Checkpoint], Iterable[Diagnostic]]

FAMILIES: list[Family] = [check_markers, check_layers, check_runtime]
