"""quantcheck: validate, inspect and repair ComfyUI per-layer quantized safetensors checkpoints.

Importing this package loads the standard library only; numerics load on first use.
"""

from __future__ import annotations

from quantcheck._version import __version__

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)

if TYPE_CHECKING:
    import os

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.discover import CheckpointSpec
    from quantcheck.model.layers import Layer
    from quantcheck.results import Report

__all__ = ["__version__", "check", "load"]


def load(path: str | os.PathLike[str] | list[str]) -> Checkpoint:
    """Open a checkpoint (file, shards, folder, index.json or URL): headers and markers only.
    A path is resolved as `quantcheck check` resolves it (a folder whose one checkpoint is in
    `transformer/` gives that checkpoint; several checkpoints: InputError); a list holds the
    shards of one checkpoint (`--as-one`). Its `layer(p).dequantize()` refuses a layer the
    rules reject (`numeric_refusal`)."""
    from quantcheck.model.checkpoint import load_checkpoint

    ck = load_checkpoint(_resolved(path))
    ck.numeric_gate = _numeric_gate
    return ck


def _numeric_gate(layer: Layer) -> str | None:
    """The rules' numeric gate, imported when a layer is first dequantized."""
    from quantcheck.rules.numeric.gate import numeric_refusal

    return numeric_refusal(layer)


def _resolved(path: str | os.PathLike[str] | list[str]) -> CheckpointSpec:
    """The one checkpoint `path` names (`model.discover`: the resolution every command uses)."""
    from quantcheck.model.discover import as_one_spec, resolve_one

    if isinstance(path, list):
        return as_one_spec([str(p) for p in path])
    return resolve_one(str(path))


def check(
    path: str | list[str],
    target: str = "default",
    deep: bool = False,
    gpu: str | list[str] | None = None,
) -> Report:
    """Run every rule on a checkpoint (resolved as `load` resolves it) and return the report.
    `gpu`: one or more `--gpu` values (`"rtx4090"`, `"sm_89,cuda=12.8"`, `"all"`); the report
    then says per target and GPU how each quantized layer runs (`gpus.SpecError` on a bad one)."""
    from quantcheck.checking import check_checkpoint
    from quantcheck.model.checkpoint import load_checkpoint

    gpus = None
    if gpu is not None:
        from quantcheck.gpus.spec import expand_specs

        gpus = expand_specs([gpu] if isinstance(gpu, str) else list(gpu))
    with load_checkpoint(_resolved(path)) as ck:
        return check_checkpoint(ck, target=target, deep=deep, gpus=gpus)
