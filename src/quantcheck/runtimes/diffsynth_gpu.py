"""DiffSynth-Studio 2.1.12 on a GPU, as data (issue 24). Read in, and run from, the PyPI wheel
(diffsynth/core/quant/backends/comfy_kitchen.py):

- no device gate: it has nothing like ComfyUI's get_disabled_quant_formats; every
  float8_e4m3fn / int8_tensorwise layer goes to comfy-kitchen (`ComfyKitchenFP8Linear`
  quantizes the activation per tensor and calls `F.linear` on two QuantizedTensors;
  `ComfyKitchenLinear` calls it on the QuantizedTensor weight), and comfy-kitchen's registry
  picks the kernel by device (cuda > triton > eager; hip first on ROCm), as in ComfyUI;
- `ComfyKitchenQuantBackend.validate_environment` disables comfy-kitchen's CUDA backend when
  torch is built for CUDA < 13 (ComfyUI's quant_ops.py rule);
- it never disables the Triton backend: comfy-kitchen registers it wherever `import triton`
  works (torch's Linux wheels depend on triton, its Windows wheels do not);
- the marker's `full_precision_matrix_mult` is not read (the layer stays quantized);
- FP8 without a device kernel: torch `_scaled_mm` raises and comfy-kitchen's fp8 handler
  dequantizes (tensor/fp8.py), as in ComfyUI without its gate.

[RUN] tests/rules/diffsynth/diff/test_gpu_diffsynth.py runs the wheel's backend and layers on
the CPU with each device's facts patched and asks comfy-kitchen's registry which backend it
picks. Standard library only.
"""

from __future__ import annotations

WHEEL = "diffsynth 2.1.12"
#: (the formats it loads are rules/diffsynth/checks.py ACCEPTED)
#: torch's Windows wheels ship no triton: comfy-kitchen registers no Triton backend there
TRITON_WINDOWS = "[GUESS: no triton package on Windows (torch's Windows wheels lack it)]"
#: unquantized weights: the pipeline's torch_dtype, bfloat16 in DiffSynth's examples [GUESS]
COMPUTE = (2, "BF16")
