"""Drop-in reproduction of sglang 0.5.23's Comfy marker inspection, without torch.

- `inspect_comfy_quant_markers(paths, param_name_mapper=None)`: the same dict (keys, order,
  derived `_` keys, value types) or the same exception type and text, for every file that
  safetensors 0.8.0 can open; files it cannot open raise `SafetensorError` (exported here),
  `FileNotFoundError` or `OSError` as safetensors does. Only deliberate
  difference: with several bad MXFP8 layers (sglang iterates a `set`), prefixes are checked
  in sorted order, so the smallest bad prefix is reported and synthesized markers are
  appended in sorted order.
- `resolve_comfy_checkpoint_quantization(markers)`: the config class name sglang picks, None
  for no markers, or `NotImplementedError` with sglang's text.
- `check_config_constructor(config_class, markers, host=Host())`: that class's constructor
  marker checks (ValueError with sglang's text); CPU host by default.
- `simulate_load(paths, ...)`: all three stages as an `SglangOutcome`.

The reproduction is sglang's behaviour and lives in its rule folder (`rules/sglang/configs.py`,
`inspector.py`, `inspector_layers.py`, `marker_bytes.py`, `outcome.py`), so the product's sglang
rules and this drop-in share it; safetensors' `safe_open` reading is `io/safe_open.py`. Standard
library only; nothing here imports numpy, torch or safetensors.
"""

from __future__ import annotations

from quantcheck.io.safe_open import SafetensorError
from quantcheck.rules.sglang.configs import (
    CONFIG_CLASSES,
    Host,
    check_config_constructor,
    is_comfy_int8_embedding,
    resolve_comfy_checkpoint_quantization,
)
from quantcheck.rules.sglang.inspector import inspect_comfy_quant_markers
from quantcheck.rules.sglang.outcome import SglangOutcome, simulate_load

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
