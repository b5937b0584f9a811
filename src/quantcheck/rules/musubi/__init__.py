"""musubi-tuner's behaviour: its own checks (checks.py; MiniMax H3's text encoder and DiT header,
text_encoder.py and h3_transformer.py, imported only for a file of those families), its rules
with evidence (catalog) and its error texts (messages). Its record and effects table:
runtimes/musubi.py.

Standard library only (the check path imports it).
"""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic, Effect
from quantcheck.model.layers import Layer
from quantcheck.runtimes import effects as _eff

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


def diag(rule: Any, layer: Layer, message: str) -> Diagnostic:
    """A finding on `layer` that fails musubi (each release's data sets the effect)."""
    w = layer.weight
    file = w.file if w is not None else next(iter(layer.tensors.values())).file
    return Diagnostic(
        rule, message, file=file, layer=layer.prefix, effects=_eff(musubi=Effect.FAILS)
    )
