"""How ComfyUI loads a LoRA onto a (quantized) diffusion model, as data.

Read in ComfyUI @783545f6: `comfy/lora.py` (`model_lora_keys_unet`, `load_lora`),
`comfy/lora_convert.py` (`convert_lora`), `comfy/weight_adapter/*.py` (each adapter's `load`),
`comfy/model_patcher.py` (`patch_weight_to_device`: the patch is computed by
`comfy.lora.calculate_weight` on the dequantized weight and written back by the layer's
`set_weight`), `comfy/ops.py` (`set_weight` -> `requantize_from_float(weight,
scale="recalculate", stochastic_rounding=seed)`, seed = `comfy.utils.string_to_seed(key)`);
`comfy/quant_ops.py` @0271a469 (ComfyUI's own stochastic-rounding quantizers for FP8, NVFP4 and
MXFP8); comfy-kitchen 0.2.40 layouts (`requantize_kwargs`; AWQ's `quantize` raises).
The differential suite (tests/rules/comfyui/diff/test_diff_lora.py) runs that code and compares.

Standard library only: the header-only LoRA path reads it.
"""

from __future__ import annotations

#: Where each fact was read (cited in findings and the JSON document).
LORA_PY = "ComfyUI @783545f6 comfy/lora.py"
EVIDENCE = {
    "keys": f"{LORA_PY} model_lora_keys_unet (~L187-377)",
    "load": f"{LORA_PY} load_lora (~L37-95): unmatched keys log 'lora key not loaded: <key>'",
    "shape": (
        "ComfyUI @783545f6 comfy/weight_adapter/lora.py LoRAAdapter.calculate_weight: "
        "mm(up, down).reshape(weight.shape) fails, logs 'ERROR lora <key> ...' and leaves the "
        "weight as it was; the layer is re-quantized anyway"
    ),
    "patched": (
        "ComfyUI @783545f6 comfy/model_patcher.py patch_weight_to_device -> comfy/ops.py "
        "set_weight: requantize_from_float(weight, scale='recalculate', "
        "stochastic_rounding=string_to_seed(key))"
    ),
    "stochastic": (
        "ComfyUI @0271a469 comfy/quant_ops.py: FP8/NVFP4/MXFP8 quantize with "
        "stochastic_rounding > 0 -> comfy/float.py stochastic_rounding / "
        "stochastic_round_quantize_nvfp4_by_block / stochastic_round_quantize_mxfp8_by_block"
    ),
    "kitchen": (
        "comfy-kitchen 0.2.40 tensor/*.py: quantize(**requantize_kwargs, "
        "stochastic_rounding=seed) keeps per_channel / convrot / group sizes / the codebook "
        "and rounds stochastically (backends/eager: floor(x + torch.rand) for INT8 and W4A4, "
        "a random threshold between the bracketing levels for W4A8/W6A8)"
    ),
    "raises": (
        "comfy-kitchen 0.2.40 TensorCoreAWQW4A16Layout.quantize raises NotImplementedError "
        "('AWQ W4A16 requires offline calibration'); patch_model does not catch it, so the "
        "whole LoRA load fails"
    ),
    "weight_function": (
        "ComfyUI @0271a469 comfy/ops.py forward: the quantized matmul needs "
        "len(self.weight_function) == 0; a LoRA applied on the fly runs the layer dequantized"
    ),
}

#: What a full-load patch does to a layer of each format: "patched" (re-quantized in its own
#: format), "raises" (its quantize raises: the whole load fails).
FULL_LOAD = {
    "float8_e4m3fn": "patched",
    "float8_e5m2": "patched",
    "nvfp4": "patched",
    "mxfp8": "patched",
    "int8_tensorwise": "patched",
    "convrot_w4a4": "patched",
    "asym_w4a8_int8": "patched",
    "w6a8_int8": "patched",
    "awq_w4a16": "raises",
    "svdquant_w4a4": "raises",
}
#: Formats ComfyUI re-quantizes with its own stochastic rounding (quant_ops.py, seeded per
#: weight key); the others go through comfy-kitchen's quantize with the layer's settings and
#: the same seed, which rounds stochastically too (comfy-kitchen 0.2.40).
COMFY_STOCHASTIC = frozenset({"float8_e4m3fn", "float8_e5m2", "nvfp4", "mxfp8"})
KITCHEN_STOCHASTIC = frozenset({"int8_tensorwise", "convrot_w4a4", "asym_w4a8_int8", "w6a8_int8"})
STOCHASTIC = COMFY_STOCHASTIC | KITCHEN_STOCHASTIC
#: Of those, the ones whose stochastic rounding quantcheck's codecs reproduce (the same
#: generator stream and arithmetic): all of them.
REPRODUCED = STOCHASTIC

#: The dynamic-VRAM (on-the-fly) path: formats whose layer re-quantizes the patched weight when
#: it is cast (`want_requant`: INT8 since PR #14669, ops.py @783545f6 linear_input_act); the
#: others run the patched layer dequantized (a dequantize + matmul every step).
ON_THE_FLY_REQUANT = frozenset({"int8_tensorwise"})

#: `LoRAAdapter.load`'s namings, in the order it tries them: (up suffix, down suffix, mid).
LORA_NAMINGS: tuple[tuple[str, str, str | None], ...] = (
    (".lora_up.weight", ".lora_down.weight", ".lora_mid.weight"),
    ("_lora.up.weight", "_lora.down.weight", None),
    (".lora_B.weight", ".lora_A.weight", None),
    (".lora.up.weight", ".lora.down.weight", None),
    (".lora_B", ".lora_A", None),
    (".lora_linear_layer.up.weight", ".lora_linear_layer.down.weight", None),
    (".lora_B.default.weight", ".lora_A.default.weight", None),
)
LOHA = (".hada_w1_a", ".hada_w1_b", ".hada_w2_a", ".hada_w2_b")
LOHA_TUCKER = (".hada_t1", ".hada_t2")
LOKR = (".lokr_w1", ".lokr_w2", ".lokr_w1_a", ".lokr_w1_b", ".lokr_t2", ".lokr_w2_a", ".lokr_w2_b")
GLORA = (".a1.weight", ".a2.weight", ".b1.weight", ".b2.weight")
#: Keys load_lora takes beside an adapter (alpha, DoRA scale, diffs, set weights).
EXTRAS = (
    ".alpha",
    ".dora_scale",
    ".reshape_weight",
    ".w_norm",
    ".b_norm",
    ".diff",
    ".diff_b",
    ".set_weight",
    ".oft_blocks",
    ".rescale",
)
#: Every suffix a loaded key can end with (longest first: the module name is what precedes).
SUFFIXES: tuple[str, ...] = tuple(
    sorted(
        {s for n in LORA_NAMINGS for s in n if s} | set(LOHA + LOHA_TUCKER + LOKR + GLORA + EXTRAS),
        key=len,
        reverse=True,
    )
)
#: SUFFIXES by the text after their last "." (a key can only end with the suffixes of its own
#: last part: the header-only path tries a few instead of all), longest first
SUFFIXES_BY_LAST: dict[str, tuple[str, ...]] = {}
for _s in SUFFIXES:
    _last = _s.rsplit(".", 1)[-1]
    SUFFIXES_BY_LAST[_last] = (*SUFFIXES_BY_LAST.get(_last, ()), _s)

#: Model-type branches of model_lora_keys_unet whose extra LoRA names derive from the state
#: dict key alone (family -> templates over `{k}` = key without "diffusion_model." and
#: ".weight", `{u}` = the same with "." -> "_"). The branches that go through a diffusers
#: conversion table (Flux, SD3, AuraFlow, PixArt, Krea2, Lumina2/Z-Image) are
#: `comfyui_lora_diffusers.py`; the UNet models' (`unet_to_diffusers`) are not modelled:
#: `BRANCHES_NOT_MODELLED`.
BRANCHES: dict[str, tuple[str, ...]] = {
    "qwen_image": ("{k}", "transformer.{k}", "lycoris_{u}"),
    "hidream": ("lycoris_{u}", "transformer.{k}"),
    "ltxv": ("{k}",),
    "kandinsky5": ("{k}", "transformer.{k}"),
    "ernie_image": ("transformer.{k}",),
    "hunyuan_dit": ("base_model.model.{k}",),
    "mochi": ("{k}",),
    "ace_step": ("{k}",),
    "omnigen2": ("{k}",),
}
#: HunyuanVideo's branch rewrites the name first (diffusion-pipe format), then adds
#: "transformer.{name}" and "diffusion_model.{name}".
HUNYUAN_VIDEO_REWRITES = (
    ("_mod.lin.", "_mod.linear."),
    ("_attn.qkv.", "_attn_qkv."),
    ("_attn.proj.", "_attn_proj."),
    ("mlp.0.", "mlp.fc1."),
    ("mlp.2.", "mlp.fc2."),
    (".modulation.lin.", ".modulation.linear."),
)
BRANCHES_NOT_MODELLED = frozenset({"unet"})
#: the families whose branch maps diffusers names through a table (comfyui_lora_diffusers.py)
DIFFUSERS_BRANCHES = frozenset({"flux", "sd3", "auraflow", "pixart", "krea2", "lumina2"})

#: How ComfyUI's model detection tells the families apart, reduced to one or two state-dict
#: keys each (first match wins; a key without "diffusion_model."). HunyuanVideo's key is
#: model_detection.py @783545f6 detect_unet_config's (~L211); the others are each family's
#: first-block weight [GUESS: a reduction of that function's tests, not a copy].
FAMILY_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hunyuan_video", ("txt_in.individual_token_refiner.blocks.0.norm1.weight",)),
    ("flux", ("double_blocks.0.img_attn.qkv.weight",)),
    ("hidream", ("double_stream_blocks.0.block.adaLN_modulation.1.weight",)),
    ("qwen_image", ("transformer_blocks.0.img_mod.1.weight",)),
    ("ltxv", ("adaln_single.linear.weight",)),
    ("wan", ("blocks.0.self_attn.q.weight", "patch_embedding.weight")),
    ("lumina2", ("cap_embedder.1.weight",)),
    ("sd3", ("joint_blocks.0.x_block.attn.qkv.weight",)),
    ("auraflow", ("double_layers.0.attn.w1q.weight",)),
    ("pixart", ("t_block.1.weight",)),
    ("krea2", ("txtfusion.projector.weight",)),
    ("unet", ("input_blocks.0.0.weight",)),
)

#: LoRA-side naming hints: a module name part that says which family (and which trainer's
#: naming) the LoRA was made for.
LORA_FAMILY_HINTS: tuple[tuple[str, str], ...] = (
    ("double_blocks", "flux"),
    ("single_blocks", "flux"),
    ("single_transformer_blocks", "flux (diffusers names)"),
    ("img_mod", "qwen_image"),
    ("double_stream_blocks", "hidream"),
    ("joint_blocks", "sd3"),
    ("input_blocks", "unet"),
    ("down_blocks", "unet (diffusers names)"),
    ("self_attn.q", "wan"),
    ("cross_attn", "wan"),
    ("adaln_single", "ltxv"),
    ("cap_embedder", "lumina2"),
)

#: Prefixes the trainers put before the module path (convention name, prefix).
PREFIXES: tuple[tuple[str, str], ...] = (
    ("kohya", "lora_unet_"),
    ("comfyui", "diffusion_model."),
    ("diffusers", "transformer."),
    ("peft", "base_model.model."),
    ("diffusers", "unet."),
    ("lycoris", "lycoris_"),
    ("onetrainer", "lora_transformer_"),
)
#: Text-encoder key prefixes (model_lora_keys_clip's names): these patch the text encoder,
#: not the diffusion model.
TEXT_ENCODER_PREFIXES: tuple[str, ...] = (
    "lora_te_",
    "lora_te1_",
    "lora_te2_",
    "lora_te3_",
    "lora_prior_te_",
    "text_encoders.",
    "text_encoder.",
    "text_encoder_2.",
)

#: Other runtimes and LoRAs on quantized layers: what is known, from where.
OTHER_RUNTIMES = {
    "sglang": "not modelled: sglang multimodal_gen's LoRA path on comfy_quant layers was not read",
    "forge-neo": (
        "not modelled (Forge #1428: LoRAs on an NVFP4 base need weight 4-4.5; code not read)"
    ),
    "sdnext": (
        "not modelled: SD.Next PR #5044 keeps sub-8-bit LoRAs as a side channel "
        "(W = dq(q) + up@down; read as its description only)"
    ),
    "invokeai": "not modelled",
    "sdcpp": "not modelled",
    "diffsynth": "not modelled",
    "musubi": "not modelled",
}

#: Diffusers-style module names per family and the ComfyUI names they stand for (name part
#: -> part), used only to explain an unmatched key ("naming convention"); ComfyUI itself maps
#: none of them for these families (no branch in model_lora_keys_unet).
DIFFUSERS_RENAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "wan": (
        (".attn1.to_q", ".self_attn.q"),
        (".attn1.to_k", ".self_attn.k"),
        (".attn1.to_v", ".self_attn.v"),
        (".attn1.to_out.0", ".self_attn.o"),
        (".attn2.to_q", ".cross_attn.q"),
        (".attn2.to_k", ".cross_attn.k"),
        (".attn2.to_v", ".cross_attn.v"),
        (".attn2.to_out.0", ".cross_attn.o"),
        (".ffn.net.0.proj", ".ffn.0"),
        (".ffn.net.2", ".ffn.2"),
    ),
}
