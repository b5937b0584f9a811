"""stable-diffusion.cpp on a GPU, as data (issue 24). Read at leejet/stable-diffusion.cpp
bcc7e295 (the modelled release) and its ggml submodule, leejet/ggml @3f85508c (the fork's
files read through the code index, commit of each copy in `GGML`); sd.cpp is C++ and does not
run here. sd.cpp has no torch and no capability gate: the ggml backend it was built with
(CUDA for NVIDIA, HIP for AMD, Metal for Apple, Vulkan / SYCL for the others, or the CPU) runs
every op it supports, and ggml's scheduler runs the others on the CPU backend (sd.cpp keeps a
trailing CPU backend for that, ggml_extend.hpp).

- float8_e4m3fn / float8_e5m2 weights: `src/model_io/safetensors_io.cpp` maps F8_E4M3 and
  F8_E5M2 to GGML_TYPE_F16 and converts them when the file loads: held at twice the stored
  size, computed as F16 (no FP8 matmul on any device).
- int8_tensorwise (+ConvRot): the weight stays GGML_TYPE_I8 (`tensor_should_be_converted`
  returns false) and `Linear::forward` (ggml_extend.hpp) calls the fork's
  `ggml_mul_mat_i8_tensorwise` (activations quantized per row, INT8 GEMM, scale epilogue).
  The fork's CUDA backend (also built for HIP) has it (`ggml-cuda/mmq-i8.cu`: INT8 BLAS, a DP4A
  kernel where none exists, e.g. RDNA2) for K and N multiples of 4 (the backend's supports_op
  gate, per mmq-i8.cu's comment); the Vulkan backend has ConvRot shaders; no Metal or SYCL
  file of the op was found [GUESS: those run it on the CPU backend].
Standard library only.
"""

from __future__ import annotations

SDCPP = "leejet/stable-diffusion.cpp @bcc7e295"
GGML = "leejet/ggml @3f85508c (ggml-cuda/mmq-i8.cu read at 1974d8c5)"
FP8_FORMATS = frozenset({"float8_e4m3fn", "float8_e5m2"})
INT8 = "int8_tensorwise"
FP8 = (
    f"[READ] {SDCPP} src/model_io/safetensors_io.cpp: F8_E4M3 / F8_E5M2 weights become "
    "GGML_TYPE_F16 when the file loads: held as F16, no FP8 matmul"
)
#: the INT8 op per backend: (mode, reason)
INT8_BY_BACKEND = {
    "cuda": ("native", f"[READ] {GGML}: ggml-cuda's ggml_mul_mat_i8_tensorwise (INT8 GEMM)"),
    "rocm": (
        "native",
        f"[READ] {GGML}: ggml-cuda built for HIP runs ggml_mul_mat_i8_tensorwise (INT8 BLAS, "
        "a DP4A kernel on RDNA2)",
    ),
    "cpu": ("native", f"[GUESS] {GGML}: ggml-cpu's ggml_mul_mat_i8_tensorwise"),
    "xpu": (
        "native",
        f"[GUESS] {GGML}: the Vulkan backend's INT8 ConvRot shaders (no SYCL file of the op)",
    ),
    "directml": (
        "native",
        f"[GUESS] {GGML}: the Vulkan backend's INT8 ConvRot shaders (sd.cpp has no DirectML)",
    ),
    "mps": (
        "emulated",
        f"[GUESS] {GGML}: no Metal file of ggml_mul_mat_i8_tensorwise was found: ggml's "
        "scheduler runs the op on the CPU backend",
    ),
}
SHAPE = (
    f"[READ] {GGML}: N={{n}}, K={{k}}: the backend's INT8 kernel needs both multiples of 4, so "
    "ggml's scheduler runs this layer's op on the CPU backend"
)
CPU_WORDS = "run on ggml's CPU backend (slow)"
