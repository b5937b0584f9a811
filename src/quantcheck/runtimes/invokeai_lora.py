"""InvokeAI's LoRA path on a ComfyUI-quantized model, read and run in the 6.14.2 wheel.

InvokeAI keeps no quantized layer of these files: its loaders multiply every weight_scale into
the weight in the model dtype and drop the markers
(`model_manager/load/model_loaders/comfyui_state_dict_utils.py` `_dequantize_comfyui_fp8(sd,
model_dtype)`, bf16 for these models). A LoRA is then applied by
`backend/patches/layer_patcher.py` `LayerPatcher.apply_smart_model_patch`: direct patching
(`_apply_model_layer_patch`: the patch computed in float32, cast to the weight's dtype, then
`module_param.data + param_weight` in that dtype) when the layer is on the GPU, a sidecar
wrapper (`_apply_model_layer_wrapper_patch`: the LoRA beside the layer) when the layer is on
the CPU, has FP8 storage or already has patches. So on the GPU the LoRA is merged into a BF16
weight: rounded twice to BF16 (the delta, then the sum), which can round a small LoRA away.
The differential suite runs `_apply_model_layer_patch` with InvokeAI's own LoRALayer.

Keys: InvokeAI's per-family conversions (`backend/patches/lora_conversions/*.py`) onto its
model's module names: not predicted key by key. Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

WHEEL = "InvokeAI 6.14.2 wheel invokeai/backend"

PATH = LoraPath(
    runtime="invokeai",
    read_at="6.14.2 (PyPI wheel)",
    default_mode="direct",
    modes={
        "direct": "default on a GPU: the LoRA merged into the bf16 weight (out of place)",
        "sidecar": "layer on the CPU, FP8 storage or already patched: the LoRA beside the layer",
    },
    outcome={},
    other="merged",
    requant="bf16",
    keys="per-family conversions (lora_conversions/*.py) onto InvokeAI's module names",
    key_map="own",
    evidence={
        "dequantized": f"{WHEEL}/model_manager/load/model_loaders/comfyui_state_dict_utils.py "
        "_dequantize_comfyui_fp8(sd, model_dtype) [RUN]",
        "direct": f"{WHEEL}/patches/layer_patcher.py LayerPatcher._apply_model_layer_patch: "
        "float32 patch -> .to(weight dtype) -> module_param.data + param_weight [RUN]",
        "sidecar": f"{WHEEL}/patches/layer_patcher.py apply_smart_model_patch (CPU, FP8 "
        "storage, existing patches -> _apply_model_layer_wrapper_patch) [READ]",
    },
    verified="[RUN]",
    cost="none beyond the bf16 model InvokeAI already runs (the file's quantization is undone "
    "at load)",
)
