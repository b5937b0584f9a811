"""`simulate_load`: inspector, resolver and constructor in a row, as the reference cases run."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from quantcheck.rules.sglang.configs import (
    Host,
    check_config_constructor,
    resolve_comfy_checkpoint_quantization,
)
from quantcheck.rules.sglang.inspector import inspect_comfy_quant_markers

Stage = Literal["inspector", "resolver", "constructor"]


@dataclass(frozen=True, slots=True)
class SglangOutcome:
    """What sglang 0.5.23 does with a checkpoint.

    `stage` is where the run stopped: the stage that raised, or on success the last stage that
    ran ("resolver" when there are no markers and nothing is constructed). `error_type` and
    `message` are the exception's class name and `str()`; `markers` is the inspector's result
    (None if it raised) and `config_class` the resolver's (None for no markers or on error).
    """

    ok: bool
    stage: Stage
    error_type: str | None = None
    message: str | None = None
    markers: dict[Any, dict[str, Any]] | None = None
    config_class: str | None = None


def _failure(
    stage: Stage,
    exc: Exception,
    markers: dict[Any, dict[str, Any]] | None = None,
    config_class: str | None = None,
) -> SglangOutcome:
    return SglangOutcome(False, stage, type(exc).__name__, str(exc), markers, config_class)


def simulate_load(
    paths: Iterable[str | os.PathLike[str]],
    param_name_mapper: Callable[[str], Any] | None = None,
    *,
    transform_markers: Callable[[dict[Any, dict[str, Any]]], dict[Any, dict[str, Any]]]
    | None = None,
    host: Host | None = None,
    convrot_int8_backend: str = "auto",
) -> SglangOutcome:
    """Run the three stages and report the first failure, never raising for sglang's errors.

    `transform_markers` is applied to the inspector's result before the resolver (a loader's
    own post-processing, e.g. the Qwen-Image 2.1 gate_up split); its errors count as inspector
    errors.
    """
    try:
        markers = inspect_comfy_quant_markers(paths, param_name_mapper)
        if transform_markers is not None:
            markers = transform_markers(markers)
    except Exception as exc:
        return _failure("inspector", exc)
    try:
        config_class = resolve_comfy_checkpoint_quantization(markers)
    except Exception as exc:
        return _failure("resolver", exc, markers)
    if config_class is None:
        return SglangOutcome(True, "resolver", markers=markers)
    try:
        check_config_constructor(
            config_class, markers, host=host, convrot_int8_backend=convrot_int8_backend
        )
    except Exception as exc:
        return _failure("constructor", exc, markers, config_class)
    return SglangOutcome(True, "constructor", markers=markers, config_class=config_class)
