"""What ComfyUI's own loading makes of one generated checkpoint, layer by layer.

The file is read with `safetensors.torch.load_file` (safe_open: the loader of `--cpu` /
`--disable-dynamic-vram`), and its state dict and header metadata go through ComfyUI's own key
plumbing (`load_diffusion_model_state_dict` up to its first look at the model: header markers,
model-prefix strip, header markers again). Each layer `<p>.weight` is loaded into a fresh module
shaped like ComfyUI's `mixed_precision_ops(...).Linear` before loading (its __init__ fields:
`factory_kwargs` {device cpu, dtype bf16}, `_orig_shape` (N, K), `_full_precision_mm` False,
`_disabled_formats` what ComfyUI's `get_disabled_quant_formats` gives for the CPU, no bias) through
ComfyUI's own `_load_quantized_module(..., load_extra_params=True)` with torch's
`Module._load_from_state_dict` as `super_load` (strict), as that Linear's `_load_from_state_dict`
does. Then the inference path of its `forward`: the input is quantized with
`QuantizedTensor.from_float(x, layout_type, scale=input_scale)` when QUANT_ALGOS says
`quantize_input` (default True), and `torch.nn.functional.linear` runs on the QuantizedTensor
weight (comfy-kitchen's dispatch, eager on CPU); layers whose format is disabled on the device, or
`full_precision_matrix_mult`, dequantize first (what the Linear's `_full_precision_mm` does). LoRA
and the full-precision fallback go through `QuantizedTensor.dequantize()`.

Outcome (of plain inference):
- "fails": the load or the first forward raises;
- "degraded": loads and runs, but the loaded weight is not the layer's weight (relative error
  over TOLERANCE against quantcheck's dequantization of what the file stores, e.g. with a W4A8
  weight_correction ComfyUI leaves unread); a stored tensor ComfyUI ignores without changing
  the weight (an int8 input_scale) is not a fault;
- "ok".
Beside it, `Outcome.dequantize_fails`: `QuantizedTensor.dequantize()` raises, or gives another
weight than the one the forward multiplies by, so LoRA patching and the full-precision fallback
fail while plain inference is right (the forward's weight is read as `linear(I_k, W)`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from safetensors import safe_open
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


class Outcome(NamedTuple):
    """What ComfyUI made of a file: plain inference, why, and whether dequantize() raised."""

    status: str
    why: str
    dequantize_fails: bool = False


def outcome(comfy: Comfy, path: str, layers: dict[str, tuple[tuple[int, int], Any]]) -> Outcome:
    """ComfyUI's loading of every layer in `layers` (by stored name) from `path`: the file
    read with safe_open, its header metadata and state dict through the key plumbing of
    load_diffusion_model_state_dict (`Comfy.plumb`), then each layer under the name the
    plumbing left it."""
    try:
        sd = load_file(path)
        with safe_open(path, framework="pt") as f:
            metadata = f.metadata()
    except Exception as exc:
        return Outcome("fails", f"safe_open: {type(exc).__name__}: {exc}")
    sd = comfy.plumb(sd, metadata)
    worst, why, dq_fails = "ok", "loads and runs", False
    for stored, ((n, k), want) in layers.items():
        prefix = _plumbed_name(sd, stored)
        if prefix is None:
            return Outcome("fails", f"the key plumbing drops {stored}.weight")
        got = _layer(comfy, sd, prefix, n, k, want)
        if got.status == "fails":
            return got
        dq_fails = dq_fails or got.dequantize_fails
        if got.status == "degraded" and worst == "ok":
            worst, why = got.status, got.why
        elif got.dequantize_fails and worst == "ok":
            why = got.why
    return Outcome(worst, why, dq_fails)


def _plumbed_name(sd: dict[str, torch.Tensor], stored: str) -> str | None:
    """The name a stored layer has after the plumbing: itself, or itself less the model prefix
    that was stripped (the longest tail of its dotted name whose weight is in `sd`)."""
    parts = stored.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[i:])
        if f"{name}.weight" in sd:
            return name
    return None


def _layer(
    comfy: Comfy, sd: dict[str, torch.Tensor], prefix: str, n: int, k: int, want: Any
) -> Outcome:
    own = {key: v for key, v in sd.items() if key.startswith(prefix + ".")}
    shell = Shell(n, k, comfy.disabled)
    shell.comfy = comfy
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []
    try:
        shell._load_from_state_dict(own, prefix + ".", {}, True, missing, unexpected, errors)
    except ERRORS as exc:
        return Outcome("fails", f"load: {type(exc).__name__}: {exc}")
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
        return Outcome("fails", f"forward: {type(exc).__name__}: {exc}")
    dq_fails, note = False, ""
    try:
        dense = weight.dequantize() if isinstance(weight, qt) else weight
    except ERRORS as exc:
        dq_fails, note = True, f"; dequantize (LoRA / fallback): {type(exc).__name__}: {exc}"
    if dq_fails or not _close(dense, want):
        runs_quantized = isinstance(w, qt)  # not dequantized for the forward
        if runs_quantized and _close(_forward_weight(w, k), want):
            # the kernel's weight is right; dequantize() raised or reads the scales otherwise
            dq_fails = True
            note = note or "; dequantize (LoRA / fallback) gives another weight than the forward"
        else:
            left = f" (left unread: {unexpected})" if unexpected else ""
            return Outcome("degraded", "the loaded weight is not the layer's weight" + left + note)
    ignores = f" (ignores {unexpected})" if unexpected else ""
    return Outcome("ok", "loads and runs" + ignores + note, dq_fails)


def _forward_weight(weight: Any, k: int) -> torch.Tensor:
    """The weight the forward multiplies by, where dequantize() cannot say: the forward of
    the identity (row i of `linear(I_k, W)` is column i of W). Exact for one-hot inputs even
    where the kernel quantizes (and ConvRot-rotates) the activations: a one-hot row, rotated
    or not, has entries of one magnitude."""
    eye = torch.eye(k, dtype=torch.bfloat16)
    return torch.nn.functional.linear(eye, weight, None).to(torch.float32).T.contiguous()
