"""Drop-in reproduction of sglang 0.5.23's Comfy marker inspection, without torch.

- `inspect_comfy_quant_markers(paths, param_name_mapper=None)`: the same dict (keys, order,
  derived `_` keys, value types) or the same exception type and text, for every file that
  safetensors 0.8.0 can open; files it cannot open raise `SafetensorError` (this module's
  own class), `FileNotFoundError` or `OSError` as safetensors does. Only deliberate
  difference: with several bad MXFP8 layers (sglang iterates a `set`), prefixes are checked
  in sorted order, so the smallest bad prefix is reported and synthesized markers are
  appended in sorted order.
- `resolve_comfy_checkpoint_quantization(markers)`: the config class name sglang picks, None
  for no markers, or `NotImplementedError` with sglang's text.
- `check_config_constructor(config_class, markers, host=Host())`: that class's constructor
  marker checks (ValueError with sglang's text); CPU host by default.
- `simulate_load(paths, ...)`: all three stages as an `SglangOutcome`.

Standard library only; nothing here imports numpy, torch or safetensors.
"""

from __future__ import annotations

from quantcheck.compat._safetensors_header import SafetensorError
from quantcheck.compat._sglang_configs import (
    CONFIG_CLASSES,
    Host,
    check_config_constructor,
    is_comfy_int8_embedding,
    resolve_comfy_checkpoint_quantization,
)
from quantcheck.compat._sglang_inspect import inspect_comfy_quant_markers
from quantcheck.compat._sglang_outcome import SglangOutcome, simulate_load

SGLANG_VERSION = "0.5.23"

__all__ = [
    "CONFIG_CLASSES",
    "SGLANG_VERSION",
    "Host",
    "SafetensorError",
    "SglangOutcome",
    "check_config_constructor",
    "inspect_comfy_quant_markers",
    "is_comfy_int8_embedding",
    "resolve_comfy_checkpoint_quantization",
    "simulate_load",
]
