"""What ComfyUI's own loading makes of one generated checkpoint, layer by layer.

The file is read with `safetensors.torch.load_file` (safe_open: the loader of `--cpu` /
`--disable-dynamic-vram`). Each layer `<p>.weight` is loaded into a fresh module shaped like
ComfyUI's `mixed_precision_ops(...).Linear` before loading (its __init__ fields: `factory_kwargs`
{device cpu, dtype bf16}, `_orig_shape` (N, K), `_full_precision_mm` False, `_disabled_formats`
what ComfyUI's `get_disabled_quant_formats` gives for the CPU, no bias) through ComfyUI's own
`_load_quantized_module(..., load_extra_params=True)` with torch's `Module._load_from_state_dict`
as `super_load` (strict), as that Linear's `_load_from_state_dict` does. Then the inference path of
its `forward`: the input is quantized with `QuantizedTensor.from_float(x, layout_type,
scale=input_scale)` when QUANT_ALGOS says `quantize_input` (default True), and
`torch.nn.functional.linear` runs on the QuantizedTensor weight (comfy-kitchen's dispatch, eager on
CPU); layers whose format is disabled on the device, or `full_precision_matrix_mult`, dequantize
first (what the Linear's `_full_precision_mm` does). LoRA and the full-precision fallback go
through `QuantizedTensor.dequantize()`.

Outcome:
- "fails": the load or the first forward raises;
- "degraded": loads and runs, but dequantize() raises (LoRA / fallback), or the loaded weight is
  not the layer's weight (relative error over TOLERANCE against quantcheck's dequantization of
  what the file stores, e.g. with a W4A8 weight_correction ComfyUI leaves unread); a stored
  tensor ComfyUI ignores without changing the weight (an int8 input_scale) is not a fault;
- "ok".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from .loader import Comfy

TOLERANCE = 0.02
#: What ComfyUI's loading or its kernels raise for files they refuse.
ERRORS = (
    KeyError,
    ValueError,
    RuntimeError,
    TypeError,
    AttributeError,
    AssertionError,
    NotImplementedError,
)


class Shell(torch.nn.Module):
    """A module with the fields `_load_quantized_module` reads (those ComfyUI's
    mixed-precision Linear sets in its __init__)."""

    def __init__(self, n: int, k: int, disabled: frozenset[str]) -> None:
        super().__init__()
        self.factory_kwargs = {"device": torch.device("cpu"), "dtype": torch.bfloat16}
        self.in_features, self.out_features = k, n
        self._orig_shape = (n, k)
        self.register_parameter("bias", None)
        self._full_precision_mm = False
        self._full_precision_mm_config = False
        self._disabled_formats = disabled
        self.layout_type: str | None = None
        self.quant_format: str | None = None

    def _load_from_state_dict(self, *args: Any) -> None:  # as the Linear's, via the module
        self.comfy.load(self, super()._load_from_state_dict, *args, load_extra_params=True)


def _close(got: torch.Tensor, want: np.ndarray | None) -> bool:
    if want is None:
        return True  # no reference (a raw case): only load and forward are judged
    g = got.detach().to(torch.float32).numpy()
    if g.shape != want.shape:
        return False
    return float(np.linalg.norm(g - want) / max(np.linalg.norm(want), 1e-30)) < TOLERANCE


def outcome(
    comfy: Comfy, path: str, layers: dict[str, tuple[tuple[int, int], Any]]
) -> tuple[str, str]:
    """(fails/degraded/ok, why) of ComfyUI's loading of every layer in `layers`."""
    try:
        sd = load_file(path)
    except Exception as exc:
        return "fails", f"safe_open: {type(exc).__name__}: {exc}"
    worst, why = "ok", "loads and runs"
    for prefix, ((n, k), want) in layers.items():
        got, reason = _layer(comfy, sd, prefix, n, k, want)
        if got == "fails":
            return got, reason
        if got == "degraded" and worst == "ok":
            worst, why = got, reason
    return worst, why


def _layer(
    comfy: Comfy, sd: dict[str, torch.Tensor], prefix: str, n: int, k: int, want: Any
) -> tuple[str, str]:
    own = {key: v for key, v in sd.items() if key.startswith(prefix + ".")}
    shell = Shell(n, k, comfy.disabled)
    shell.comfy = comfy
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []
    try:
        shell._load_from_state_dict(own, prefix + ".", {}, True, missing, unexpected, errors)
    except ERRORS as exc:
        return "fails", f"load: {type(exc).__name__}: {exc}"
    weight = shell.weight
    x = torch.randn(4, k, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    qt = comfy.quant_ops.QuantizedTensor
    try:
        w = weight
        if isinstance(w, qt) and shell._full_precision_mm:
            w = w.dequantize()
        inp = x
        algo = comfy.quant_ops.QUANT_ALGOS.get(shell.quant_format, {})
        if isinstance(w, qt) and algo.get("quantize_input", True):
            scale = getattr(shell, "input_scale", None)
            inp = qt.from_float(x, shell.layout_type, scale=scale)
        torch.nn.functional.linear(inp, w, None)
    except ERRORS as exc:
        return "fails", f"forward: {type(exc).__name__}: {exc}"
    try:
        dense = weight.dequantize() if isinstance(weight, qt) else weight
    except ERRORS as exc:
        return "degraded", f"dequantize (LoRA / fallback): {type(exc).__name__}: {exc}"
    if not _close(dense, want):
        left = f" (left unread: {unexpected})" if unexpected else ""
        return "degraded", "the loaded weight is not the layer's weight" + left
    return "ok", "loads and runs" + (f" (ignores {unexpected})" if unexpected else "")
