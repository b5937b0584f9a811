"""SD.Next on a GPU, as data (issue 24). Read at vladmandic/sdnext d11a619 (the modelled
release); no SD.Next code runs here (its modules import the whole web UI).

`pipelines/native_transformer.py build_component_prequantized` turns every comfy-quant layer
(int8_tensorwise, float8_e4m3fn, nvfp4) into an SDNQ layer holding the stored codes, on SDNQ's
dequantize forward (`get_forward_func(..., False)`), then
`modules/sdnq/loader.py apply_sdnq_options_to_model` applies the user's
`sdnq_quantize_matmul_mode` setting, whose default is "disabled" (modules/ui_definitions.py):
so by default every layer is dequantized on every step, on every device (SD.Next has no device
gate for these files; weights stay small). With the setting on (`--gpu ...,flags=
sdnq-quantized-matmul`), `apply_sdnq_options_to_module` gives a linear the quantized matmul when
N and K are >= 32 and multiples of 16, not for layers marked full_precision_matrix_mult, and
not for an FP8 matmul where `kernel_wrappers.is_fp8_mm_supported` is false (CUDA below sm_89;
ROCm below gfx940 and gfx10xx-gfx11xx; every other backend). The INT8 matmul is SDNQ's Triton
kernel on CUDA / ROCm / XPU (not Alchemist or integrated XPUs), OpenVINO's on the CPU,
`torch._int_mm` elsewhere (`kernel_wrappers.py`). NVFP4 layers are re-quantized for an FP8
matmul (`re_quantize_for_matmul`) [GUESS: no native FP4 matmul]. Standard library only.
"""

from __future__ import annotations

SDN = "vladmandic/sdnext @d11a619"
SETTING = "sdnq-quantized-matmul"
DEFAULT = (
    f"[READ] {SDN}: SD.Next builds the layer as an SDNQ layer on its dequantize forward and "
    "its setting Quantized MatMul (sdnq_quantize_matmul_mode) defaults to disabled "
    "(native_transformer.py build_component_prequantized, sdnq/loader.py "
    "apply_sdnq_options_to_model): dequantized every step on any device"
)
#: the formats SD.Next adopts (rules/sdnext/checks.py STORAGE)
INT8 = (
    f"[READ] {SDN} sdnq/kernel_wrappers.py: SDNQ's INT8 matmul ({{how}}) with Quantized MatMul on"
)
INT8_HOW = {
    "cuda": "its Triton kernel",
    "rocm": "its Triton kernel",
    "xpu": "its Triton kernel [GUESS: not an Alchemist or integrated XPU]",
    "cpu": "OpenVINO's int8 matmul",
    "mps": "torch._int_mm [GUESS: on MPS]",
    "directml": "torch._int_mm [GUESS: on DirectML]",
}
FP8 = (
    f"[READ] {SDN} sdnq/kernel_wrappers.py is_fp8_mm_supported: SDNQ's FP8 matmul with "
    "Quantized MatMul on"
)
FP8_OFF = (
    f"[READ] {SDN} sdnq/loader.py apply_sdnq_options_to_module: is_fp8_mm_supported is false "
    "on this device (CUDA below sm_89, ROCm outside gfx94x / gfx12xx, other backends), so the "
    "FP8 layer keeps the dequantize forward"
)
NVFP4 = (
    f"[READ] {SDN}: an nvfp4 layer is re-quantized for SDNQ's FP8 matmul "
    "(re_quantize_for_matmul), no FP4 matmul [GUESS: per call]"
)
SHAPE = (
    f"[READ] {SDN} sdnq/loader.py apply_sdnq_options_to_module: N={{n}}, K={{k}}: the quantized "
    "matmul needs both >= 32 and multiples of 16, so this layer keeps the dequantize forward"
)
FPMM = (
    f"[READ] {SDN} native_transformer.py: the marker sets full_precision_matrix_mult, so the "
    "layer is in modules_to_not_use_matmul and keeps the dequantize forward"
)
#: is_fp8_mm_supported: NVIDIA from sm_89; ROCm gfx >= 0x1200 or 0x940 <= gfx < 0x1000
FP8_CUDA = (8, 9)
#: devices.dtype [GUESS: BF16 where the device has it, F16 before sm_80, F32 on the CPU]
COMPUTE_NVIDIA_BF16 = (8, 0)
