"""quantcheck: validate, inspect and repair ComfyUI per-layer quantized safetensors checkpoints.

Importing this package loads the standard library only; numerics load on first use.
"""

from __future__ import annotations

from quantcheck._version import __version__

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)

if TYPE_CHECKING:
    import os

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer
    from quantcheck.results import Report

__all__ = ["__version__", "check", "load"]


def load(path: str | os.PathLike[str] | list[str]) -> Checkpoint:
    """Open a checkpoint (file, shards, folder, index.json or URL): headers and markers only.
    Its `layer(p).dequantize()` refuses a layer the rules reject (`numeric_refusal`)."""
    from quantcheck.model.checkpoint import load_checkpoint

    ck = load_checkpoint(path if isinstance(path, list) else [str(path)])
    ck.numeric_gate = _numeric_gate
    return ck


def _numeric_gate(layer: Layer) -> str | None:
    """The rules' numeric gate, imported when a layer is first dequantized."""
    from quantcheck.rules.numeric.gate import numeric_refusal

    return numeric_refusal(layer)


def check(path: str | list[str], target: str = "default", deep: bool = False) -> Report:
    """Run every rule on a checkpoint and return the report."""
    from quantcheck.checking import check_paths

    return check_paths(path if isinstance(path, list) else [str(path)], target=target, deep=deep)
