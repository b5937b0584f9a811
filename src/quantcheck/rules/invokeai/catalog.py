"""QC72x: InvokeAI's own rules (what it refuses or silently changes)."""

from __future__ import annotations

from quantcheck.rules.levels import Safety, Severity
from quantcheck.rules.rule import Rule, effects, rule_in_doc_order

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
#: InvokeAI 6.14.2 (the PyPI wheel): the shared ComfyUI single-file helpers.
INV = (
    "InvokeAI 6.14.2 (PyPI wheel) invokeai/backend/model_manager/load/model_loaders/"
    "comfyui_state_dict_utils.py"
)
#: How the facts were established.
INV_RUN = (
    "verified by running InvokeAI 6.14.2's own _dequantize_comfyui_fp8 and "
    "_strip_quantization_metadata on generated checkpoints, then load_state_dict(strict=False, "
    "assign=True) into a Linear of the logical [N, K] as its loaders do "
    "(tests/rules/invokeai/diff, make diff-consumers)"
)
_I = "invokeai"

RULES: list[Rule] = [
    rule_in_doc_order(
        "QC720",
        "invokeai-dequantized-at-load",
        INFO,
        "InvokeAI dequantizes the layers to BF16 at load (no VRAM saving)",
        "Which quantized layers InvokeAI turns back into BF16 weights when it loads the file: "
        "FP8 with a per-tensor scale, INT8 without ConvRot (per-tensor or [N, 1] scale), legacy "
        "scaled_fp8 (scale_weight).",
        "InvokeAI reads no comfy_quant marker: it multiplies each weight_scale / scale_weight "
        "into its weight in the compute dtype and drops the scales and markers. These layers "
        "then compute correctly, but the model takes the memory of an unquantized one.",
        "blocks.0.attn.qkv: F8_E4M3 [3072, 3072] + F32 weight_scale [] -> BF16 [3072, 3072]",
        "Nothing to repair; use the unquantized checkpoint (or a GGUF/bitsandbytes one) if the "
        "size matters.",
        effects(**{_I: "degraded"}),
        None,
        f"{INV} _dequantize_comfyui_fp8 (docstring: no 'only if the weight is fp8' gate), "
        f"_strip_quantization_metadata; used by qwen_image.py and wan.py (flux.py and "
        f"z_image.py carry copies); {INV_RUN}.",
    ),
    rule_in_doc_order(
        "QC721",
        "invokeai-convrot-weights-rotated",
        E,
        "ConvRot INT8 layer: InvokeAI computes with the rotated weights, silently",
        "No int8_tensorwise layer meant for InvokeAI has convrot: true.",
        "ConvRot stores the INT8 codes of W·H (a block Hadamard rotation along K); ComfyUI "
        "rotates the activations to match. InvokeAI multiplies codes by weight_scale and never "
        "rotates back, so the layer computes x·(W·H)ᵀ instead of x·Wᵀ: wrong images, with no "
        "error or warning. InvokeAI issue #9559 asks for ConvRot support.",
        '{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 16}',
        "Requantize the layers as int8_tensorwise without ConvRot, or as float8_e4m3fn.",
        effects(**{_I: "degraded"}),
        Safety.UNSAFE,
        f"{INV} _dequantize_comfyui_fp8; {INV_RUN} (the loaded weight differs from the layer's "
        "weight by the rotation).",
    ),
    rule_in_doc_order(
        "QC722",
        "invokeai-scales-misread",
        E,
        "InvokeAI multiplies scales the format does not define as multipliers: garbage, silently",
        "For every layer whose weight_scale InvokeAI multiplies in, the product is the format's "
        "weight (true only for FP8 with a per-tensor scale and INT8 with a per-tensor or [N, 1] "
        "scale).",
        "MXFP8 stores E8M0 exponent bytes in a swizzled block layout; InvokeAI converts the U8 "
        "bytes to numbers (e.g. 127 instead of 2^0), repeat-interleaves them along K and "
        "multiplies: the layer loads with garbage weights and no error. Any other scale shape "
        "that happens to broadcast does the same.",
        "blocks.0.attn.qkv: mxfp8, weight_scale U8 [128, 4] multiplied as integers",
        "Requantize the layers to float8_e4m3fn or int8_tensorwise for InvokeAI.",
        effects(**{_I: "degraded"}),
        Safety.UNSAFE,
        f"{INV} _dequantize_comfyui_fp8 (scale.to(compute_dtype), repeat_interleave); {INV_RUN}.",
    ),
    rule_in_doc_order(
        "QC723",
        "invokeai-weight-shape-after-dequantize",
        E,
        "InvokeAI cannot load the layer: after its multiply the weight has the wrong shape",
        "After InvokeAI's weight x scale (scale repeat-interleaved along each dimension where it "
        "differs), the weight has the layer's logical shape [N, K].",
        "Packed formats (NVFP4, W4A8, W6A8, W4A4, AWQ) store [N, K/2] or narrower codes and "
        "padded layouts store more rows; InvokeAI does not unpack them. Either the multiply "
        "itself raises (the scale does not broadcast), or load_state_dict refuses the weight "
        "(size mismatch for X.weight). The load fails.",
        "nvfp4: U8 weight [128, 32] x F8_E4M3 scale [128, 4] -> [128, 32], layer is [128, 64]",
        "Requantize the layers to float8_e4m3fn or int8_tensorwise for InvokeAI, or dequantize "
        "them.",
        effects(**{_I: "fails"}),
        Safety.UNSAFE,
        f"{INV} _dequantize_comfyui_fp8; torch load_state_dict size check (qwen_image.py "
        f"load_state_dict_ignoring_extras, wan.py load_state_dict(strict=False, assign=True)); "
        f"{INV_RUN}.",
    ),
    rule_in_doc_order(
        "QC724",
        "invokeai-companions-kept",
        W,
        "InvokeAI keeps quantization tensors its Wan loader refuses",
        "Each layer holds only tensors InvokeAI consumes or strips (weight, bias, weight_scale, "
        "scale_weight, scale_input, comfy_quant).",
        "_strip_quantization_metadata drops only those keys; weight_scale_2, input_scale, "
        "weight_s_rel, ... stay in the state dict. The Qwen-Image, FLUX and Z-Image loaders "
        'ignore unexpected keys (logged at DEBUG); the Wan loader raises ("... weights that '
        'WanTransformer3DModel has nowhere to put").',
        "blocks.0.attn.qkv.input_scale beside an FP8 weight",
        "Remove the tensors for InvokeAI's Wan loader (an FP8 input_scale is not used once "
        "InvokeAI dequantizes).",
        effects(**{_I: "degraded"}),
        None,
        f"{INV} _strip_quantization_metadata; InvokeAI 6.14.2 wan.py _raise_for_incompatible_keys "
        "and util/state_dict_loading.py load_state_dict_ignoring_extras (read); which keys "
        f"survive: {INV_RUN}.",
    ),
    rule_in_doc_order(
        "QC725",
        "invokeai-scale-weight-dropped",
        W,
        "legacy scale_weight: some InvokeAI loaders drop it and load unscaled codes",
        "No layer meant for InvokeAI's Z-Image or FLUX.2 loaders is scaled by scale_weight "
        "(legacy scaled_fp8).",
        "The shared helper (Qwen-Image, Wan) multiplies scale_weight in like weight_scale; the "
        "Z-Image single-file loader filters scale_weight / scaled_fp8 out before anything is "
        "dequantized (its own comment calls this a pre-existing bug), and the FLUX.2 loader's "
        "copy multiplies only weight_scale and then drops scale_weight. There the FP8 codes load "
        "unscaled: wrong weights, no error.",
        "blocks.0.attn.qkv.weight F8_E4M3 + blocks.0.attn.qkv.scale_weight F32 [] + scaled_fp8",
        "Rename scale_weight to weight_scale (and write float8_e4m3fn markers): every InvokeAI "
        "loader multiplies weight_scale in.",
        effects(**{_I: "degraded"}),
        Safety.DISPLAY,
        "InvokeAI 6.14.2 (PyPI wheel) model_loaders/z_image.py _load_from_singlefile (~L455-500, "
        "keys_to_remove and the comment on scaled-fp8 checkpoints) and flux.py "
        "_dequantize_fp8_weights (~L1080-1130): read in the wheel, not run (the differential "
        "tests run the shared comfyui_state_dict_utils.py helpers, which apply scale_weight).",
    ),
]
