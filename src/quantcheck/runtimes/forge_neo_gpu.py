"""Forge Neo's device gates, as data (issue 24): a ComfyUI port, so `rules/forge_neo/gpu.py`
asks ComfyUI's decisions (`runtimes/comfyui_gpu.py`) with what differs here. Read in
Haoming02/sd-webui-forge-classic (its `neo` line) through the code index; the index's ids name
the stored copies where a commit was not recorded with them.

What it inherits, and from which ComfyUI release:
- `backend/memory_management.py` (its header: a port of ComfyUI v0.7.0's model_management,
  index id 59921421374): `supports_fp8_compute`, `supports_nvfp4_compute`,
  `supports_mxfp8_compute` with ComfyUI's conditions (NVIDIA CC >= 8.9 and torch >= 2.3 /
  Windows 2.4, or major >= 9; CC >= 10; CC >= 10 and torch >= 2.10; the AMD
  gfx1200/gfx1201/gfx950 block with torch >= 2.7 and ROCm >= 6.4 setting SUPPORT_FP8_OPS).
  Unlike ComfyUI, SUPPORT_FP8_OPS is never set from a command-line switch: there is no
  `--supports-fp8-compute`.
- `backend/operations.py` `using_forge_operations` (its comment: ComfyUI v0.16.4 ops.py
  pick_operations): the disabled set for nvfp4, mxfp8 and the FP8 formats (index id
  58782036651); a later copy's `_get_disabled_quants` adds the INT8 formats through
  `supports_int8_compute` (index id 70520088885), whose Forge body was not found: ComfyUI's is
  assumed [GUESS].
- `backend/operations_mixed_precision.py` @1835c9c (ComfyUI v0.27.0 ops.py): a disabled
  format or the marker's full_precision_matrix_mult sets `_full_precision_mm`; the forward is
  ComfyUI's inference path (a weight function forces the dequantize path).
- `backend/quant_ops.py` @939c56d (ComfyUI v0.27.0 quant_ops.py): comfy-kitchen's CUDA backend
  off below CUDA 13, as ComfyUI; but the Triton backend stays on unless
  `--disable-triton-backend` or `import triton` fails (ComfyUI: off unless
  `--enable-triton-backend`). torch's Linux wheels depend on triton; its Windows wheels do not.
- `backend/utils.py` load_torch_file: safetensors.safe_open, which reads F8_E8M0 (no
  DynamicVRAM loader).
- the compute dtype: `torch.bfloat16 if memory_management.should_use_bf16(device) else
  torch.float32` (operations.py, index ids above): unquantized weights are held in F32 where
  BF16 is not chosen (NVIDIA before sm_80, RDNA2 and older, DirectML, the CPU), not in F16
  as ComfyUI does. Standard library only.
"""

from __future__ import annotations

FORGE = "Haoming02/sd-webui-forge-classic"
#: the switches of `gpus/spec.FLAGS` Forge Neo reads (backend/args.py, quant_ops.py)
FLAGS = frozenset({"disable-triton-backend"})
GATES_SOURCE = f"[READ] {FORGE} backend/memory_management.py (index id 59921421374)"
INT8_GATE = (
    "[GUESS: Forge's supports_int8_compute was not read (operations.py _get_disabled_quants, "
    "index id 70520088885, calls it); ComfyUI's conditions assumed]"
)
TRITON_SOURCE = (
    f"{FORGE} backend/quant_ops.py @939c56d: Triton kept unless --disable-triton-backend or "
    "`import triton` fails"
)
#: torch's Windows wheels ship no triton: [GUESS] Forge Neo on Windows has none
TRITON_WINDOWS = "[GUESS: no triton package on Windows (torch's Windows wheels lack it)]"

#: should_use_bf16 (memory_management.py, index id 59921421374): BF16 from NVIDIA sm_80, on
#: AMD but RDNA2 and older (AMD_RDNA2_AND_OLDER_ARCH), on XPU where torch.xpu says so, on MPS
#: from macOS 14; F32 otherwise (its caller's `else torch.float32`).
AMD_RDNA2_AND_OLDER = ("gfx1030", "gfx1031", "gfx1010", "gfx1011", "gfx1012", "gfx906", "gfx900")
BF16_BACKENDS = {"xpu": "[GUESS: torch.xpu.is_bf16_supported()]", "mps": "[GUESS: macOS >= 14]"}
