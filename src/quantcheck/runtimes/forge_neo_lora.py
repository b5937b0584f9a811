"""Forge Neo's LoRA path on comfy-kitchen quantized layers (Haoming02/sd-webui-forge-classic,
its `neo` line), read only.

`backend/patcher/lora.py` @419825e `LoraLoader.refresh`: in the default (offline) mode a layer
whose weight has `_layout_cls` is dequantized by the module's `convert_weight`, patched in
float32 by `merge_lora_to_weight` (a port of ComfyUI's calculate_weight) and written back by
`set_weight(weight, inplace_update=False, seed=string_to_seed(key))`;
`backend/operations_mixed_precision.py` @1835c9c `set_weight` calls
`requantize_from_float(weight, scale="recalculate", stochastic_rounding=seed)`, whose
quantizers (`backend/quant_ops.py` @939c56d, a port of ComfyUI v0.27.0 quant_ops with
`backend/float.py`) are ComfyUI's: seeded stochastic rounding for FP8/NVFP4/MXFP8,
comfy-kitchen's for INT8. So the numbers are ComfyUI's. The online mode ("... (fp16 LoRA)" in
Diffusion in Low Bits, forced for GGUF: `modules_forge/main_entry.py`
`refresh_model_loading_parameters` -> `dynamic_args["online_lora"]`) keeps the patches in
`forge_online_loras` and merges them into the cast weight at every forward
(`backend/operations.py` `weights_manual_cast`): the layer runs dequantized.

Keys: `modules_forge/packages/comfy/lora.py` `model_lora_keys_unet` / `load_lora`, a port of
ComfyUI's comfy/lora.py (backend/patcher/lora.py's header names v0.3.77): predicted as
ComfyUI @783545f6's [READ; GUESS that the port carries the same family branches: one ComfyUI
added after the port's version would be missing]. Formats it loads at all: QUANT_ALGOS
@939c56d (FP8 e4m3/e5m2, NVFP4, MXFP8, INT8). Standard library only.
"""

from __future__ import annotations

from quantcheck.runtimes.lora_record import LoraPath

REPO = "Haoming02/sd-webui-forge-classic"
LOADED = ("float8_e4m3fn", "float8_e5m2", "nvfp4", "mxfp8", "int8_tensorwise")

PATH = LoraPath(
    runtime="forge-neo",
    read_at="419825e (backend/patcher/lora.py) / 1835c9c (ops) / 939c56d (quant_ops)",
    default_mode="offline",
    modes={
        "offline": "default (Diffusion in Low Bits 'Automatic'): merged in float32 and "
        "re-quantized as ComfyUI does (its quantizers, seed string_to_seed(key))",
        "online": "'(fp16 LoRA)' option, forced for GGUF: merged into the cast weight at every "
        "forward; the layer runs dequantized",
    },
    outcome=dict.fromkeys(LOADED, "requantized"),
    other="not-loaded",
    requant="comfyui",
    keys="ComfyUI's model_lora_keys_unet / load_lora, ported (modules_forge/packages/comfy/"
    "lora.py)",
    key_map="comfyui",
    evidence={
        "merge": f"{REPO} @419825e backend/patcher/lora.py LoraLoader.refresh: convert_weight "
        "-> merge_lora_to_weight(float32) -> set_weight(seed=string_to_seed(key)) [READ]",
        "requant": f"{REPO} @1835c9c backend/operations_mixed_precision.py set_weight -> "
        "requantize_from_float(scale='recalculate', stochastic_rounding=seed) [READ]",
        "quantizers": f"{REPO} @939c56d backend/quant_ops.py (port of ComfyUI v0.27.0 "
        "quant_ops): float.stochastic_rounding / stochastic_round_quantize_nvfp4_by_block / "
        "_mxfp8_by_block when stochastic_rounding > 0 [READ]",
        "online": f"{REPO} modules_forge/main_entry.py refresh_model_loading_parameters "
        "(dynamic_args['online_lora']); backend/operations.py weights_manual_cast merges "
        "forge_online_loras into the cast weight [READ]",
        "keys": f"{REPO} backend/patcher/lora.py imports model_lora_keys_unet, load_lora from "
        "modules_forge/packages/comfy/lora.py (ComfyUI port; its branches taken as ComfyUI "
        "@783545f6's [GUESS]) [READ]",
    },
    verified="[READ]",
    cost="offline: none at run time (the layer stays quantized; re-quantization noise as "
    "ComfyUI's); online: the layer is dequantized and patched every step",
)
