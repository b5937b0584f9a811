"""ComfyUI's diffusers-name tables for LoRA keys, as data (the names only).

Read in ComfyUI @783545f6 `comfy/utils.py` (`flux_to_diffusers`, `mmdit_to_diffusers`,
`auraflow_to_diffusers`, `pixart_to_diffusers`, `krea2_to_diffusers`, `z_image_to_diffusers`,
their `*_MAP_*` tables) and `comfy/lora.py` `model_lora_keys_unet` (which prefixes each family's
branch puts before a diffusers name, ~L222-349). Only `.weight` entries are listed: the key map
takes nothing else from these tables. `rules/lora/diffusers.py` builds the entries.

A LoRA module name maps to a model key, to a slice of one (a fused qkv weight: rows
[offset, offset + size) of dimension 0; the LoRA patches that slice and the whole layer is
written back), or to a key with a function applied to the patch ("swap": the halves of the
delta's rows swapped, ComfyUI's `swap_scale_shift`). Standard library only.
"""

from __future__ import annotations

#: the family's config, read from the base's tensors as ComfyUI's model_detection reads it:
#: name -> ("count", block prefix) | ("rows", tensor) | ("const", value)
CONFIG: dict[str, dict[str, tuple[str, object]]] = {
    "flux": {
        "depth": ("count", "double_blocks."),
        "single": ("count", "single_blocks."),
        "hidden": ("rows", "img_in.weight"),
    },
    "sd3": {"depth": ("rows64", "x_embedder.proj.weight"), "blocks": ("count", "joint_blocks.")},
    "auraflow": {"double": ("count", "double_layers."), "single": ("count", "single_layers.")},
    # PixArt's hidden size is fixed in model_detection (1152), whatever the file holds
    "pixart": {"depth": ("count", "blocks."), "hidden": ("const", 1152)},
    "krea2": {"layers": ("count", "blocks.")},
    # z_image_to_diffusers reads n_refiner_layers, which Lumina2's config never sets: 2
    "lumina2": {
        "layers": ("count", "layers."),
        "hidden": ("rows", "cap_embedder.1.weight"),
        "refiners": ("const", 2),
    },
}

#: the LoRA names each family's branch gives a diffusers name `{k}` (`{u}`: "." -> "_")
NAMES: dict[str, tuple[str, ...]] = {
    "flux": ("transformer.{k}", "lycoris_{u}", "lora_transformer_{u}", "{k}"),
    "sd3": ("transformer.{k}", "base_model.model.{k}", "lora_transformer_{u}", "lycoris_{u}"),
    "auraflow": ("transformer.{k}",),
    "pixart": ("transformer.{k}", "base_model.model.{k}", "unet.base_model.model.{k}"),
    "krea2": ("diffusion_model.{k}", "transformer.{k}", "lycoris_{u}", "{k}"),
    "lumina2": ("diffusion_model.{k}", "transformer.{k}", "lycoris_{u}", "{k}"),
}

#: a slice: (diffusers suffix, model suffix, offset in units, size in units); the unit is the
#: family's hidden size ("hidden"; SD3: depth x 64)
Slice = tuple[str, str, int, int]
#: a rename: (diffusers suffix, model suffix)
Rename = tuple[str, str]

FLUX_DOUBLE_SLICES: tuple[Slice, ...] = (
    ("attn.to_q", "img_attn.qkv", 0, 1),
    ("attn.to_k", "img_attn.qkv", 1, 1),
    ("attn.to_v", "img_attn.qkv", 2, 1),
    ("attn.add_q_proj", "txt_attn.qkv", 0, 1),
    ("attn.add_k_proj", "txt_attn.qkv", 1, 1),
    ("attn.add_v_proj", "txt_attn.qkv", 2, 1),
)
FLUX_DOUBLE: tuple[Rename, ...] = (
    ("attn.to_out.0", "img_attn.proj"),
    ("norm1.linear", "img_mod.lin"),
    ("norm1_context.linear", "txt_mod.lin"),
    ("attn.to_add_out", "txt_attn.proj"),
    ("ff.net.0.proj", "img_mlp.0"),
    ("ff.net.2", "img_mlp.2"),
    ("ff_context.net.0.proj", "txt_mlp.0"),
    ("ff_context.net.2", "txt_mlp.2"),
    ("ff.linear_in", "img_mlp.0"),
    ("ff.linear_out", "img_mlp.2"),
    ("ff_context.linear_in", "txt_mlp.0"),
    ("ff_context.linear_out", "txt_mlp.2"),
    ("attn.norm_q", "img_attn.norm.query_norm"),
    ("attn.norm_k", "img_attn.norm.key_norm"),
    ("attn.norm_added_q", "txt_attn.norm.query_norm"),
    ("attn.norm_added_k", "txt_attn.norm.key_norm"),
)
FLUX_SINGLE_SLICES: tuple[Slice, ...] = (
    ("attn.to_q", "linear1", 0, 1),
    ("attn.to_k", "linear1", 1, 1),
    ("attn.to_v", "linear1", 2, 1),
    ("proj_mlp", "linear1", 3, 4),
)
FLUX_SINGLE: tuple[Rename, ...] = (
    ("norm.linear", "modulation.lin"),
    ("proj_out", "linear2"),
    ("attn.norm_q", "norm.query_norm"),
    ("attn.norm_k", "norm.key_norm"),
    ("attn.to_qkv_mlp_proj", "linear1"),
    ("attn.to_out", "linear2"),
)
#: whole-model entries: (diffusers name, model name, function or "")
FLUX_BASIC: tuple[tuple[str, str, str], ...] = (
    ("proj_out", "final_layer.linear", ""),
    ("x_embedder", "img_in", ""),
    ("time_text_embed.timestep_embedder.linear_1", "time_in.in_layer", ""),
    ("time_text_embed.timestep_embedder.linear_2", "time_in.out_layer", ""),
    ("context_embedder", "txt_in", ""),
    ("time_text_embed.text_embedder.linear_1", "vector_in.in_layer", ""),
    ("time_text_embed.text_embedder.linear_2", "vector_in.out_layer", ""),
    ("time_text_embed.guidance_embedder.linear_1", "guidance_in.in_layer", ""),
    ("time_text_embed.guidance_embedder.linear_2", "guidance_in.out_layer", ""),
    ("norm_out.linear", "final_layer.adaLN_modulation.1", "swap"),
    ("controlnet_x_embedder", "pos_embed_input", ""),
)
#: Flux's extra entry (lora.py ~L276-279): `<model path of a linear1>_qkv` -> the first three
#: hidden-size slices of that linear1 (the USO LoRAs' name for it)
FLUX_LINEAR1_QKV = ("linear1", "linear1_qkv", 0, 3)

SD3_SLICES: tuple[Slice, ...] = (
    ("attn.to_q", "x_block.attn.qkv", 0, 1),
    ("attn.to_k", "x_block.attn.qkv", 1, 1),
    ("attn.to_v", "x_block.attn.qkv", 2, 1),
    ("attn.add_q_proj", "context_block.attn.qkv", 0, 1),
    ("attn.add_k_proj", "context_block.attn.qkv", 1, 1),
    ("attn.add_v_proj", "context_block.attn.qkv", 2, 1),
    ("attn2.to_q", "x_block.attn2.qkv", 0, 1),
    ("attn2.to_k", "x_block.attn2.qkv", 1, 1),
    ("attn2.to_v", "x_block.attn2.qkv", 2, 1),
)
SD3_BLOCK: tuple[Rename, ...] = (
    ("norm1_context.linear", "context_block.adaLN_modulation.1"),
    ("attn.to_add_out", "context_block.attn.proj"),
    ("ff_context.net.0.proj", "context_block.mlp.fc1"),
    ("ff_context.net.2", "context_block.mlp.fc2"),
    ("attn.norm_added_q", "context_block.attn.ln_q"),
    ("attn.norm_added_k", "context_block.attn.ln_k"),
    ("norm1.linear", "x_block.adaLN_modulation.1"),
    ("attn.to_out.0", "x_block.attn.proj"),
    ("attn.norm_q", "x_block.attn.ln_q"),
    ("attn.norm_k", "x_block.attn.ln_k"),
    ("attn2.to_out.0", "x_block.attn2.proj"),
    ("attn2.norm_q", "x_block.attn2.ln_q"),
    ("attn2.norm_k", "x_block.attn2.ln_k"),
    ("ff.net.0.proj", "x_block.mlp.fc1"),
    ("ff.net.2", "x_block.mlp.fc2"),
)
SD3_BASIC: tuple[tuple[str, str, str], ...] = (
    ("context_embedder", "context_embedder", ""),
    ("time_text_embed.timestep_embedder.linear_1", "t_embedder.mlp.0", ""),
    ("time_text_embed.timestep_embedder.linear_2", "t_embedder.mlp.2", ""),
    ("pos_embed.proj", "x_embedder.proj", ""),
    ("time_text_embed.text_embedder.linear_1", "y_embedder.mlp.0", ""),
    ("time_text_embed.text_embedder.linear_2", "y_embedder.mlp.2", ""),
    ("norm_out.linear", "final_layer.adaLN_modulation.1", "swap"),
    ("proj_out", "final_layer.linear", ""),
)
#: SD3's last block (index depth - 1) maps its norm1_context with the swap too
SD3_LAST_SWAP = ("norm1_context.linear", "context_block.adaLN_modulation.1")

AURAFLOW_DOUBLE: tuple[Rename, ...] = (
    ("attn.to_q", "attn.w2q"),
    ("attn.to_k", "attn.w2k"),
    ("attn.to_v", "attn.w2v"),
    ("attn.to_out.0", "attn.w2o"),
    ("attn.add_q_proj", "attn.w1q"),
    ("attn.add_k_proj", "attn.w1k"),
    ("attn.add_v_proj", "attn.w1v"),
    ("attn.to_add_out", "attn.w1o"),
    ("ff.linear_1", "mlpX.c_fc1"),
    ("ff.linear_2", "mlpX.c_fc2"),
    ("ff.out_projection", "mlpX.c_proj"),
    ("ff_context.linear_1", "mlpC.c_fc1"),
    ("ff_context.linear_2", "mlpC.c_fc2"),
    ("ff_context.out_projection", "mlpC.c_proj"),
    ("norm1.linear", "modX.1"),
    ("norm1_context.linear", "modC.1"),
)
AURAFLOW_SINGLE: tuple[Rename, ...] = (
    ("attn.to_q", "attn.w1q"),
    ("attn.to_k", "attn.w1k"),
    ("attn.to_v", "attn.w1v"),
    ("attn.to_out.0", "attn.w1o"),
    ("norm1.linear", "modCX.1"),
    ("ff.linear_1", "mlp.c_fc1"),
    ("ff.linear_2", "mlp.c_fc2"),
    ("ff.out_projection", "mlp.c_proj"),
)
AURAFLOW_BASIC: tuple[tuple[str, str, str], ...] = (
    ("time_step_proj.linear_1", "t_embedder.mlp.0", ""),
    ("time_step_proj.linear_2", "t_embedder.mlp.2", ""),
    ("context_embedder", "cond_seq_linear", ""),
    ("pos_embed.proj", "init_x_linear", ""),
    ("proj_out", "final_linear", ""),
    ("norm_out.linear", "modF.1", "swap"),
)

PIXART_SLICES: tuple[Slice, ...] = (
    ("attn1.to_q", "attn.qkv", 0, 1),
    ("attn1.to_k", "attn.qkv", 1, 1),
    ("attn1.to_v", "attn.qkv", 2, 1),
    ("attn2.to_k", "cross_attn.kv_linear", 0, 1),
    ("attn2.to_v", "cross_attn.kv_linear", 1, 1),
)
PIXART_BLOCK: tuple[Rename, ...] = (
    ("attn2.to_q", "cross_attn.q_linear"),
    ("attn1.to_out.0", "attn.proj"),
    ("ff.net.0.proj", "mlp.fc1"),
    ("ff.net.2", "mlp.fc2"),
    ("attn2.to_out.0", "cross_attn.proj"),
)
PIXART_BASIC: tuple[tuple[str, str, str], ...] = (
    ("adaln_single.emb.resolution_embedder.linear_1", "csize_embedder.mlp.0", ""),
    ("adaln_single.emb.resolution_embedder.linear_2", "csize_embedder.mlp.2", ""),
    ("adaln_single.emb.aspect_ratio_embedder.linear_1", "ar_embedder.mlp.0", ""),
    ("adaln_single.emb.aspect_ratio_embedder.linear_2", "ar_embedder.mlp.2", ""),
    ("pos_embed.proj", "x_embedder.proj", ""),
    ("caption_projection.linear_1", "y_embedder.y_proj.fc1", ""),
    ("caption_projection.linear_2", "y_embedder.y_proj.fc2", ""),
    ("adaln_single.emb.timestep_embedder.linear_1", "t_embedder.mlp.0", ""),
    ("adaln_single.emb.timestep_embedder.linear_2", "t_embedder.mlp.2", ""),
    ("adaln_single.linear", "t_block.1", ""),
    ("proj_out", "final_layer.linear", ""),
)

KREA2_BLOCK: tuple[Rename, ...] = (
    ("attn.to_q", "attn.wq"),
    ("attn.to_k", "attn.wk"),
    ("attn.to_v", "attn.wv"),
    ("attn.to_gate", "attn.gate"),
    ("attn.to_out.0", "attn.wo"),
    ("attn.to_out", "attn.wo"),
    ("ff.gate", "mlp.gate"),
    ("ff.up", "mlp.up"),
    ("ff.down", "mlp.down"),
)
#: (diffusers block prefix, model block prefix, how many: a config name or a count)
KREA2_BLOCKS: tuple[tuple[str, str, str | int], ...] = (
    ("transformer_blocks", "blocks", "layers"),
    ("text_fusion.layerwise_blocks", "txtfusion.layerwise_blocks", 2),
    ("text_fusion.refiner_blocks", "txtfusion.refiner_blocks", 2),
)
KREA2_BASIC: tuple[tuple[str, str, str], ...] = (
    ("img_in", "first", ""),
    ("time_embed.linear_1", "tmlp.0", ""),
    ("time_embed.linear_2", "tmlp.2", ""),
    ("time_mod_proj", "tproj.1", ""),
    ("txt_in.linear_1", "txtmlp.1", ""),
    ("txt_in.linear_2", "txtmlp.3", ""),
    ("text_fusion.projector", "txtfusion.projector", ""),
    ("final_layer.linear", "last.linear", ""),
)

LUMINA2_SLICES: tuple[Slice, ...] = (
    ("attention.to_q", "attention.qkv", 0, 1),
    ("attention.to_k", "attention.qkv", 1, 1),
    ("attention.to_v", "attention.qkv", 2, 1),
)
LUMINA2_BLOCK: tuple[Rename, ...] = (
    ("attention.norm_q", "attention.q_norm"),
    ("attention.norm_k", "attention.k_norm"),
    ("attention.to_out.0", "attention.out"),
    ("attention_norm1", "attention_norm1"),
    ("attention_norm2", "attention_norm2"),
    ("feed_forward.w1", "feed_forward.w1"),
    ("feed_forward.w2", "feed_forward.w2"),
    ("feed_forward.w3", "feed_forward.w3"),
    ("ffn_norm1", "ffn_norm1"),
    ("ffn_norm2", "ffn_norm2"),
    ("adaLN_modulation.0", "adaLN_modulation.0"),
)
#: (block prefix, how many: a config name)
LUMINA2_BLOCKS: tuple[tuple[str, str], ...] = (
    ("layers", "layers"),
    ("context_refiner", "refiners"),
    ("noise_refiner", "refiners"),
)
LUMINA2_BASIC: tuple[tuple[str, str, str], ...] = (
    ("all_final_layer.2-1.linear", "final_layer.linear", ""),
    ("all_final_layer.2-1.adaLN_modulation.1", "final_layer.adaLN_modulation.1", ""),
    ("all_x_embedder.2-1", "x_embedder", ""),
    ("cap_embedder.0", "cap_embedder.0", ""),
    ("cap_embedder.1", "cap_embedder.1", ""),
    ("t_embedder.mlp.0", "t_embedder.mlp.0", ""),
    ("t_embedder.mlp.2", "t_embedder.mlp.2", ""),
)
