"""Upstream source locations that rule evidence cites (project, version and file)."""

#: sglang 0.5.23: inspect_comfy_quant_markers, _merge_comfy_quant_marker and
#: resolve_comfy_checkpoint_quantization.
SGQ = "python/sglang/multimodal_gen/runtime/utils/quantization_utils.py"
#: sglang 0.5.23: the Comfy config classes (ConvRotInt8Config, KitchenW4A8Config,
#: KitchenW4A4Config, ComfyFp8Config, ComfyNvfp4Config) and their layer builds.
SGQC = "python/sglang/multimodal_gen/runtime/layers/quantization/"
#: sglang 0.5.23's rowwise FP8 header path, and the two loaders that call the header path.
SGRF = "python/sglang/multimodal_gen/runtime/layers/quantization/rowwise_fp8.py"
SGTE = "python/sglang/multimodal_gen/runtime/loader/component_loaders/text_encoder_loader.py"
SGTL = "python/sglang/multimodal_gen/runtime/loader/transformer_load_utils.py"
#: MiniMax-H3's own inspection (inspect_minimax_h3_safetensors,
#: resolve_minimax_h3_checkpoint_quantization) and the --comfyui-mode single-file loader.
SGH3 = "python/sglang/multimodal_gen/runtime/loader/minimax_h3_weights.py"
SGSPEC = "python/sglang/multimodal_gen/runtime/loader/comfyui_checkpoints/spec.py"
#: sglang's DiT weight loader (every release 0.5.18-0.5.23): load_model_from_full_model_state_dict
#: casts each tensor to its parameter's dtype (`.to(dtype=target_dtype)`) before the
#: parameter's weight_loader; an AssertionError there stops the load.
SGFSDP = (
    "python/sglang/multimodal_gen/runtime/loader/fsdp_load.py load_model_from_full_model_state_dict"
)
#: the DiT linears and their weight loaders (WEIGHT_LOADER_V2_SUPPORTED, weight_loader_v2).
SGLIN = "python/sglang/multimodal_gen/runtime/layers/linear.py"
#: ComfyUI (Comfy-Org/ComfyUI) at quantcheck's reference commit 0271a469fe29: the
#: quantized-op loader `_load_quantized_module` (L1159-1303: marker json.loads ~L1192, the
#: QUANT_ALGOS lookup ~L1206, per-format branches ~L1211-1280, the storage-dtype value cast
#: ~L1284, extra parameters ~L1288-1297) and `comfy/quant_ops.py` (QUANT_ALGOS, layouts).
CUI_OPS = "Comfy-Org/ComfyUI @0271a469 comfy/ops.py _load_quantized_module"
CUI_QOPS = "Comfy-Org/ComfyUI @0271a469 comfy/quant_ops.py"
#: ComfyUI's load path at 783545f6: safetensors parsing and key plumbing.
CUI_UTILS = "Comfy-Org/ComfyUI @783545f6 comfy/utils.py load_safetensors"
CUI_SD = "Comfy-Org/ComfyUI @783545f6 comfy/sd.py load_diffusion_model_state_dict"
#: ComfyUI's own code at 0271a469 executed against quantcheck's verdicts (make diff-comfyui).
CUI_DIFF = "run: tests/rules/comfyui/diff, ComfyUI's own code at 0271a469"
#: How the ComfyUI facts were established (quoted in every ComfyUI rule's evidence).
CUI_RUN = (
    "established by running ComfyUI's unpatched loader layer by layer on CPU with "
    "comfy-kitchen 0.2.40"
)
