"""Open LoRA files and analyse them on an opened base: the QC83x findings `check --lora` adds
and `quantcheck lora` reports. Standard library only without figures."""

from __future__ import annotations

from quantcheck.diagnostics import Diagnostic
from quantcheck.rules.lora.analyse import Analysis, analyse
from quantcheck.rules.lora.checks import findings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.model.checkpoint import Checkpoint


def lora_diagnostics(
    base: Checkpoint,
    lora_paths: list[Any],
    strength: float = 1.0,
    *,
    numbers: bool = False,
    max_bytes: int | None = None,
    targets: tuple[str, ...] = (),
) -> tuple[Analysis, list[Diagnostic]]:
    """Open the LoRA files (headers, and their tensors when `numbers`), analyse them on the
    opened `base` (ComfyUI's path, and the LoRA paths of `targets`' other runtimes), and
    return the analysis with its QC83x findings, after the LoRA files' own container findings
    (a truncated or malformed LoRA is reported as a checkpoint is)."""
    from quantcheck.model.checkpoint import load_checkpoint

    loras = [
        load_checkpoint(p if not isinstance(p, str) else [p], read_markers=False)
        for p in lora_paths
    ]
    try:
        a = analyse(base, loras, strength, numbers=numbers, max_bytes=max_bytes, runtimes=targets)
    finally:
        for ck in loras:
            ck.close()
    own = [d for ck in loras for d in ck.diagnostics]
    return a, own + findings(a)
