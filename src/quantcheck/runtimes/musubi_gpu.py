"""musubi-tuner on a GPU, as data (issue 24). Read at kohya-ss/musubi-tuner 725869d
(`src/musubi_tuner/modules/convrot_int8_utils.py`); musubi has no capability gate. The only
layers it takes pre-quantized are ConvRot INT8 (its gate, `runtimes/musubi.py`), and
`ConvRotInt8LinearFn.forward` runs `int8_linear` (its fused Triton kernel: rotation, row-wise
INT8 activations, INT8 GEMM, scale epilogue; `convrot_int8_kernels.py`) when `HAS_TRITON and
x.is_cuda` (CUDA or ROCm tensors), else its eager fallback: the rotation and a transient
dequantized matmul ("Weight VRAM is still reduced, but there is no speedup"). torch's Linux
wheels for CUDA and ROCm depend on triton; on Windows triton-windows must be installed (its
warning). Standard library only.
"""

from __future__ import annotations

MUSUBI = "kohya-ss/musubi-tuner @725869d modules/convrot_int8_utils.py ConvRotInt8LinearFn"
NATIVE = f"[READ] {MUSUBI}: its fused Triton INT8 kernel (HAS_TRITON and a CUDA/ROCm tensor)"
#: Triton's INT8 tl.dot before Ampere was not checked
OLD_NVIDIA = (8, 0)
OLD_GUESS = "[GUESS: Triton's INT8 dot on this compute capability]"
EAGER = (
    f"[READ] {MUSUBI}: not a CUDA/ROCm tensor, so its eager fallback rotates and multiplies with a "
    "transiently dequantized weight (no speedup)"
)
WINDOWS = (
    f"[GUESS] {MUSUBI}: on Windows HAS_TRITON needs the triton-windows package (musubi's "
    "warning); without it the eager fallback dequantizes the weight every step"
)
