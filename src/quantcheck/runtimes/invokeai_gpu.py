"""InvokeAI 6.14.2 on a GPU, as data (issue 24): it has no device gate. Its ComfyUI
single-file loaders (model_loaders/qwen_image.py, wan.py) call
`comfyui_state_dict_utils._dequantize_comfyui_fp8(sd, model_dtype)`, which multiplies every
weight by its `weight_scale` / `scale_weight` in `model_dtype` when the model loads, then
`_strip_quantization_metadata` drops the scales and markers: every quantized layer is an
ordinary float weight on every device, held at N x K in that dtype (larger than stored), with
no quantized matmul and no per-call dequantization. `model_dtype` is
`TorchDevice.choose_bfloat16_safe_dtype(device)` (util/devices.py): BF16 wherever a BF16
tensor can be made on the device, else F16 on CUDA, F32 elsewhere. InvokeAI has no DirectML
device (`choose_torch_device`: CUDA, XPU, MPS, else the CPU).

[RUN] tests/rules/invokeai/diff/test_gpu_invokeai.py runs `_dequantize_comfyui_fp8` from the
pinned wheel on every loadable example and checks the dtype and bytes it leaves. Standard
library only.
"""

from __future__ import annotations

WHEEL = "invokeai 6.14.2"
REASON = (
    f"[RUN] {WHEEL} comfyui_state_dict_utils._dequantize_comfyui_fp8: the weight is multiplied "
    "by its scale in the model dtype when the model loads and the markers are dropped: an "
    "ordinary {dtype} weight on every device, no quantized matmul (InvokeAI has no device gate)"
)
#: choose_bfloat16_safe_dtype: BF16 where torch makes a BF16 tensor on the device [READ
#: util/devices.py]; MPS needs macOS 14 for BF16 [GUESS: a current macOS]
HELD = (2, "BF16")
DIRECTML = (
    "[READ] InvokeAI has no DirectML device (util/devices.py choose_torch_device): on this "
    "machine it runs on the CPU"
)
