"""What one sglang release's own code decides for a checkpoint: loads quantized, or not."""

from __future__ import annotations

import types

#: exceptions the inspector, resolver and constructors raise for files they refuse
REFUSALS = (ValueError, NotImplementedError, TypeError, KeyError, OverflowError)


def real_verdict(mod: types.ModuleType, paths: list[str]) -> tuple[bool, str]:
    """(loads as a quantized checkpoint, why) under release module `mod`.

    Releases with `inspect_comfy_quant_markers` (0.5.19+): inspector, resolver, then the chosen
    config class built from the markers (its constructor's marker checks). 0.5.18 has no
    inspector: only the header path (`get_quant_config_from_safetensors_metadata`, the NVFP4
    header builder) can recognise the file.
    """
    if not hasattr(mod, "inspect_comfy_quant_markers"):
        for path in paths:
            try:
                if mod.get_quant_config_from_safetensors_metadata(path) is not None:
                    return True, "header path: quantization config"
                if mod.build_nvfp4_config_from_safetensors(path) is not None:
                    return True, "header path: NVFP4 config"
            except REFUSALS as exc:
                return False, f"header path: {type(exc).__name__}: {exc}"
        return False, "no marker inspector; header path found nothing"
    try:
        markers = mod.inspect_comfy_quant_markers(paths)
        config = mod.resolve_comfy_checkpoint_quantization(markers)
    except REFUSALS as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if config is None:
        return False, "no markers: loaded as unquantized"
    return True, type(config).__name__
