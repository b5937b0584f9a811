"""Upstream source locations that rule evidence cites (project, version and file)."""

#: sglang 0.5.23: inspect_comfy_quant_markers, _merge_comfy_quant_marker and
#: resolve_comfy_checkpoint_quantization.
SGQ = "python/sglang/multimodal_gen/runtime/utils/quantization_utils.py"
#: sglang 0.5.23: the Comfy config classes (ConvRotInt8Config, KitchenW4A8Config,
#: KitchenW4A4Config, ComfyFp8Config, ComfyNvfp4Config) and their layer builds.
SGQC = "python/sglang/multimodal_gen/runtime/layers/quantization/"
