"""What one sglang release's own code decides for a checkpoint: loads quantized, or not, and
through which of its two readers."""

from __future__ import annotations

import types
from typing import Any

#: exceptions the header path, inspector, resolver and constructors raise for files they
#: refuse (0.5.23's RowwiseFp8Error is a ValueError)
REFUSALS = (ValueError, NotImplementedError, TypeError, KeyError, OverflowError)


#: codes of the stages after the config (layer build, weight load, first forward): the
#: config-stage tests leave them to `test_stages.py`, which runs those stages
LATER_STAGE = frozenset(("QC615", "QC630", "QC307", "QC220", "QC219", "QC312"))


def later_only(report: Any, key: str) -> bool:
    """Whether every finding that fails target `key` through the reader these tests run (the
    findings that name no loader: the header path, then the markers) is a later-stage one
    (`LATER_STAGE`)."""
    failing = {
        d.code
        for d in report.diagnostics
        if d.effect_at(key).value == "fails" and d.data.get("loaders") is None
    }
    return bool(failing) and failing <= LATER_STAGE


def reader_status(report: Any, key: str) -> str:
    """quantcheck's verdict for the loader `real_verdict` runs: the text-encoder loader's order
    (0.5.19+), the transformer loader's on 0.5.18 (rules/sglang/loaders.py)."""
    loaders = report.target_status(key)["loaders"]
    v = loaders.get("text-encoder") or loaders["transformer-weights-path"]
    return str(v["status"])


def real_verdict(mod: types.ModuleType, paths: list[str]) -> tuple[bool, str, str]:
    """(loads as a quantized checkpoint, why, path) under release module `mod`; path is
    "header" when the header path decides, else "markers" or "none".

    The order of sglang's text-encoder loader (`_get_encoder_quant_config`, 0.5.19+): the
    header path `get_quant_config_from_safetensors_metadata` per file (a config, or an
    exception, ends it), then the marker inspector, resolver and the chosen config class
    (its constructor's marker checks). 0.5.18 has no inspector: its transformer loader tries
    the header path, then the NVFP4 builder over the file list.
    """
    for path in paths:
        try:
            config = mod.get_quant_config_from_safetensors_metadata(path)
        except REFUSALS as exc:
            return False, f"header path: {type(exc).__name__}: {exc}", "header"
        if config is not None:
            return True, f"header path: {type(config).__name__}", "header"
    if not hasattr(mod, "inspect_comfy_quant_markers"):
        try:
            if mod.build_nvfp4_config_from_safetensors_list(paths) is not None:
                return True, "header path: NVFP4 config", "header"
        except REFUSALS as exc:
            return False, f"header path: {type(exc).__name__}: {exc}", "header"
        return False, "no marker inspector; header path found nothing", "none"
    try:
        markers = mod.inspect_comfy_quant_markers(paths)
        config = mod.resolve_comfy_checkpoint_quantization(markers)
    except REFUSALS as exc:
        return False, f"{type(exc).__name__}: {exc}", "markers"
    if config is None:
        return False, "no markers: loaded as unquantized", "none"
    return True, type(config).__name__, "markers"
