"""FAMILIES: the model families quantcheck recognises, as data — one entry per family.

Each entry says how a checkpoint of the family is recognised (the key tests of ComfyUI's own
`comfy/model_detection.py` `detect_unet_config` @783545f6, or `comfy/sd.py` `detect_te_model`
for text encoders), which stored shapes ComfyUI reads to compute the model's config, its
numbered block groups, its reference layouts (`layouts.py`, generated from ComfyUI's own
model classes by tools/family_keys.py), the modules a variant may add or drop, and the layers
the family's producers keep in high precision, with who keeps them and why. Adding a family
is one entry here (and a layout plus cases in tests/families/).

The sources the entries cite are the constants below (file @ commit, or package version);
each entry's `sources` and each `Keep.producers` name them.
"""

from __future__ import annotations

from quantcheck._record import record

#: ComfyUI's model detection and text-encoder detection.
DETECT = "ComfyUI 783545f6 comfy/model_detection.py detect_unet_config"
TE_DETECT = "ComfyUI 783545f6 comfy/sd.py detect_te_model"
#: convert_to_quant's filters (the PyPI wheel 1.3.4 was read; issue 26 cites @0c70dd90).
CTQ = "convert_to_quant 1.3.4 (PyPI) convert_to_quant/constants.py"
#: ComfyUI-GGUF's converter: keys_hiprec (kept F32 "for some reason": nn.Parameters that
#: cannot load from a quantized version).
GGUF = "city96/ComfyUI-GGUF tools/convert.py @8ccadf24"
#: The newer ComfyUI-GGUF lists (LTXV, MiniMax H3), as read for the project's spec.
GGUF_NEW = "city96/ComfyUI-GGUF @8e0d9cad keys_hiprec/keys_noquant (spec gpu-lora-families §2d)"
#: comfy-quants' static artifact contracts.
CQ = (
    "Comfy-Org/comfy-quants @5d8eaaec comfy/artifact_contracts.py, model_adapters/ltxv.py "
    "(spec gpu-lora-families §2d)"
)
#: ComfyUI-INT8-Fast's MiniMax H3 entry and its "skip edges" recipe.
INT8FAST = "BobJohnson24/ComfyUI-INT8-Fast PR #99 (spec gpu-lora-families §2d)"


@record
class ShapeRead:
    """A config field ComfyUI's detection computes from one stored shape:
    `field = shape(key)[dim] // divide` (`dim` -1 is the last dimension)."""

    field: str
    key: str
    dim: int
    divide: int = 1


@record
class Keep:
    """Layers (every module whose name contains `pattern`, as convert_to_quant matches) that
    `producers` keep in high precision, and why."""

    pattern: str
    producers: tuple[str, ...]
    reason: str


@record
class Family:
    """One model family (see the module docstring)."""

    name: str
    title: str
    kind: str  # "diffusion" or "text-encoder"
    #: the name ComfyUI gives it (`image_model` or TEModel)
    comfyui: str
    #: recognised when every key of one of these tuples is present (after the prefix)
    detect: tuple[tuple[str, ...], ...]
    #: and none of these is
    absent: tuple[str, ...]
    #: the stored shapes ComfyUI reads for the config
    reads: tuple[ShapeRead, ...]
    #: numbered block groups: (group prefix, label in the summary)
    blocks: tuple[tuple[str, str], ...]
    #: reference layouts (layouts.LAYOUTS names) the checkpoint is compared with
    layouts: tuple[str, ...]
    #: modules a variant may add or drop (substring match): never missing, never extra
    optional: tuple[str, ...]
    keep: tuple[Keep, ...]
    sources: tuple[str, ...]
    #: config fields that must hold one of these values (ComfyUI's shape tests)
    only: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: name prefixes a published file uses for the layout's own (old -> new), applied before
    #: the layout comparison
    renames: tuple[tuple[str, str], ...] = ()


def _reads(*rows: tuple[str, str, int] | tuple[str, str, int, int]) -> tuple[ShapeRead, ...]:
    return tuple(ShapeRead(*row) for row in rows)


#: Layers convert_to_quant's generic AVOID_KEY_NAMES keeps for every filter (the entries that
#: name real layers of these families; "norm" and "bias" are never quantized anyway).
_CTQ_GENERIC = ("convert_to_quant (AVOID_KEY_NAMES)",)
_QUALITY = "quality"
#: The project's condensed table of what at least one major producer keeps high precision.
_UNION = "the producers' union (spec gpu-lora-families §2d)"
_PARAM = "an nn.Parameter ComfyUI cannot load from a quantized version"


def _ctq(flag: str, *patterns: str, reason: str = _QUALITY) -> tuple[Keep, ...]:
    return tuple(Keep(p, (f"convert_to_quant --{flag}",), reason) for p in patterns)


_FLUX_READS = _reads(
    ("hidden_size", "img_in.weight", 0),
    ("in_channels", "img_in.weight", 1, 4),
    ("context_in_dim", "txt_in.weight", 1),
    ("vec_in_dim", "vector_in.in_layer.weight", 1),
)

FAMILIES: tuple[Family, ...] = (
    Family(
        "sd3",
        "SD3.5",
        "diffusion",
        "mmdit",
        (("joint_blocks.0.context_block.attn.qkv.weight",),),
        (),
        _reads(
            ("in_channels", "x_embedder.proj.weight", 1),
            ("depth", "x_embedder.proj.weight", 0, 64),
            ("adm_in_channels", "y_embedder.mlp.0.weight", 1),
            ("context_in_features", "context_embedder.weight", 1),
            ("context_out_features", "context_embedder.weight", 0),
        ),
        (("joint_blocks", ""),),
        ("sd3.5-large",),
        ("x_block.attn2", "x_block.ln_q", "x_block.ln_k", "context_block.attn.ln_", "pos_embed"),
        (),  # no producer list for SD3.5 was read
        (f"{DETECT} (mmdit branch)",),
    ),
    Family(
        "hunyuanvideo15",
        "HunyuanVideo 1.5",
        "diffusion",
        "hunyuan_video",
        (("txt_in.individual_token_refiner.blocks.0.norm1.weight", "vision_in.proj.0.weight"),),
        (),
        _reads(
            ("hidden_size", "img_in.proj.weight", 0),
            ("in_channels", "img_in.proj.weight", 1),
            ("context_in_dim", "txt_in.input_embedder.weight", 1),
            ("vision_in_dim", "vision_in.proj.0.weight", 0),
        ),
        (("double_blocks", "double"), ("single_blocks", "single")),
        ("hunyuanvideo-1.5",),
        ("guidance_in", "byt5_in", "time_r_in", "vector_in"),
        (
            *_ctq(
                "hunyuan",
                "vision_in.proj.0",
                "vision_in.proj.4",
                "img_in.proj",
                "cond_type_embedding",
                "layernorm",
            ),
        ),
        (f"{DETECT} (hunyuan_video branch, vision_in: 1.5)", f"{CTQ} HUNYUAN_AVOID_KEY_NAMES"),
    ),
    Family(
        "chroma",
        "Chroma",
        "diffusion",
        "chroma",
        (
            (
                "double_blocks.0.img_attn.norm.key_norm.scale",
                "distilled_guidance_layer.in_proj.weight",
            ),
            (
                "double_blocks.0.img_attn.norm.key_norm.weight",
                "distilled_guidance_layer.in_proj.weight",
            ),
        ),
        (),
        _reads(("hidden_size", "img_in.weight", 0), ("context_in_dim", "txt_in.weight", 1)),
        (("double_blocks", "double"), ("single_blocks", "single")),
        ("chroma",),
        ("nerf_", "img_in_patch", "__x0__"),
        (
            *_ctq(
                "distillation_large",
                "distilled_guidance_layer",
                "final_layer",
                "img_in",
                "txt_in",
            ),
        ),
        (f"{DETECT} (flux branch, distilled_guidance_layer: chroma)", f"{CTQ} MODEL_FILTERS"),
    ),
    Family(
        "flux2",
        "Flux.2",
        "diffusion",
        "flux2",
        (("double_stream_modulation_img.lin.weight", "img_in.weight"),),
        (),
        _reads(
            ("hidden_size", "img_in.weight", 0),
            ("in_channels", "img_in.weight", 1),
            ("context_in_dim", "txt_in.weight", 1),
        ),
        (("double_blocks", "double"), ("single_blocks", "single")),
        ("flux2-dev", "flux2-klein-4b"),
        ("guidance_in",),
        (
            *_ctq(
                "flux2",
                "stream_modulation",
                "guidance_in",
                "time_in",
                "final_layer",
                "img_in",
                "txt_in",
            ),
        ),
        (
            f"{DETECT} (flux branch, double_stream_modulation_img: flux2)",
            f"{CTQ} FLUX2_LAYER_KEYNAMES",
        ),
    ),
    Family(
        "flux",
        "Flux.1",
        "diffusion",
        "flux",
        (
            ("double_blocks.0.img_attn.norm.key_norm.scale", "img_in.weight"),
            ("double_blocks.0.img_attn.norm.key_norm.weight", "img_in.weight"),
        ),
        ("double_stream_modulation_img.lin.weight",),
        _FLUX_READS,
        (("double_blocks", "double"), ("single_blocks", "single")),
        ("flux1-dev",),
        ("guidance_in", "txt_norm", "gate_proj", "up_proj", "down_proj"),
        (
            *(
                Keep(p, (_UNION,), _QUALITY)
                for p in ("img_in", "txt_in", "vector_in", "time_in", "guidance_in", "final_layer")
            ),
        ),
        (f"{DETECT} (flux branch)", "spec gpu-lora-families §2d condensed table"),
    ),
    Family(
        "minimax_h3",
        "MiniMax H3",
        "diffusion",
        "minimax_h3",
        (("video_patch_proj.weight", "audio_patch_proj.weight"),),
        (),
        _reads(
            ("hidden_size", "video_patch_proj.weight", 0),
            ("text_dim", "condition_proj.weight", 1),
            ("ffn_hidden_size", "blocks.0.mlp.fc1.weight", 0, 2),
            ("timestep_input_dim", "time_embedder.proj_in.weight", 1),
        ),
        (("blocks", ""), ("token_refiner.blocks", "refiner")),
        ("minimax-h3",),
        ("adaln_t_table", "time_embedder"),
        (
            *_ctq(
                "minimaxh3",
                "audio_patch_proj",
                "condition_proj",
                "final_layer",
                "time_embedder",
                "token_refiner",
                "video_patch_proj",
            ),
            Keep("adaln_proj", (GGUF_NEW, INT8FAST), "in_features 8: ConvRot needs K % 256 == 0"),
            Keep("adaln_t_table", (GGUF_NEW,), _PARAM),
            Keep("modulation", (GGUF_NEW,), _PARAM),
        ),
        (f"{DETECT} (minimax_h3 branch)", f"{CTQ} MINIMAXH3_LAYER_KEYNAMES", GGUF_NEW, INT8FAST),
    ),
    Family(
        "ltx2",
        "LTX-2",
        "diffusion",
        "ltxav",
        (
            (
                "adaln_single.emb.timestep_embedder.linear_1.bias",
                "audio_adaln_single.linear.weight",
            ),
            ("adaln_single.emb.timestep_embedder.linear_1.bias",),
        ),
        ("pos_embed.proj.bias",),
        _reads(
            ("attention_head_dim", "transformer_blocks.0.attn2.to_k.weight", 0, 32),
            ("cross_attention_dim", "transformer_blocks.0.attn2.to_k.weight", 1),
        ),
        (("transformer_blocks", ""),),
        ("ltx-2",),
        ("keyframes_abs_pos_embedding", "to_gate_logits", "prompt_adaln_single", "audio_"),
        (
            *_ctq(
                "ltxv2",
                "scale_shift_table",
                "adaln_single",
                "patchify_proj",
                "proj_out",
                "to_gate_logits",
                "embeddings_connector",
                "transformer_blocks.0.",
                "transformer_blocks.1.",
                "transformer_blocks.46.",
                "transformer_blocks.47.",
            ),
            Keep("caption_projection", (CQ,), "comfy-quants LTXV contract: keep_bf16"),
            Keep("scale_shift_table", (GGUF,), _PARAM),
        ),
        (f"{DETECT} (ltxv branch, audio_adaln_single: ltxav)", f"{CTQ} LTXV2_LAYER_KEYNAMES", CQ),
    ),
    Family(
        "zimage",
        "Z-Image (Lumina2)",
        "diffusion",
        "lumina2",
        (("cap_embedder.1.weight", "noise_refiner.0.attention.k_norm.weight"),),
        (),
        _reads(
            ("dim", "cap_embedder.1.weight", 0),
            ("cap_feat_dim", "cap_embedder.1.weight", 1),
        ),
        (("layers", ""), ("noise_refiner", "noise"), ("context_refiner", "context")),
        ("z-image",),
        ("siglip_", "clip_text_pooled_proj", "time_text_embed", "dec_net", "__x0__"),
        (
            *_ctq(
                "zimage",
                "x_embedder",
                "final_layer",
                "cap_embedder.1",
                "adaLN_modulation",
                "t_embedder",
            ),
            Keep(
                "cap_embedder.0",
                ("convert_to_quant --zimage",),
                "a norm: quantized, it fails to load (size mismatch, convert_to_quant #48)",
            ),
            Keep("x_pad_token", ("convert_to_quant --zimage",), _PARAM),
            Keep("cap_pad_token", ("convert_to_quant --zimage",), _PARAM),
        ),
        (f"{DETECT} (lumina2 branch, dim 3840: Z-Image)", f"{CTQ} ZIMAGE_*_KEY_NAMES"),
    ),
    Family(
        "wan",
        "Wan 2.x",
        "diffusion",
        "wan2.1",
        (("head.modulation",),),
        (),
        _reads(
            ("dim", "head.modulation", -1),
            ("out_dim", "head.head.weight", 0, 4),
            ("ffn_dim", "blocks.0.ffn.0.weight", 0),
            ("in_dim", "patch_embedding.weight", 1),
        ),
        (("blocks", ""), ("vace_blocks", "vace")),
        ("wan2.1-t2v-14b", "wan2.1-i2v-14b"),
        (
            "img_emb",
            "k_img",
            "v_img",
            "norm_k_img",
            "vace_",
            "control_adapter",
            "audio",
            "face_",
            "patch_embedding_",
            "ref_conv",
        ),
        (
            *_ctq(
                "wan",
                "text_embedding",
                "time_embedding",
                "time_projection",
                "head.head",
                "face_adapter",
                "audio_injector",
            ),
            Keep("patch_embedding", _CTQ_GENERIC, _QUALITY),
            Keep("img_emb.proj", _CTQ_GENERIC, _QUALITY),
            Keep(".modulation", (GGUF, *_CTQ_GENERIC), _PARAM),
        ),
        (f"{DETECT} (wan2.1 branch)", f"{CTQ} WAN_LAYER_KEYNAMES, AVOID_KEY_NAMES", GGUF),
    ),
    Family(
        "qwen_image",
        "Qwen-Image",
        "diffusion",
        "qwen_image",
        (("txt_norm.weight", "img_in.weight", "transformer_blocks.0.img_mod.1.weight"),),
        (),
        _reads(("in_channels", "img_in.weight", 1), ("hidden_size", "img_in.weight", 0)),
        (("transformer_blocks", ""),),
        ("qwen-image",),
        ("__index_timestep_zero__", "addition_t_embedding"),
        (
            *_ctq(
                "qwen",
                "time_text_embed",
                "img_in",
                "norm_out",
                "proj_out",
                "transformer_blocks.0.img_mod.1",
                "txt_in",
                "txt_norm",
            ),
        ),
        (f"{DETECT} (qwen_image branch)", f"{CTQ} QWEN_LAYER_KEYNAMES, QWEN_AVOID_KEY_NAMES"),
    ),
    # ------------------------------------------------------------------ text encoders
    Family(
        "t5xxl",
        "T5-XXL",
        "text-encoder",
        "t5_xxl",
        (("encoder.block.23.layer.1.DenseReluDense.wi_1.weight",),),
        (),
        _reads(("d_ff", "encoder.block.23.layer.1.DenseReluDense.wi_1.weight", 0)),
        (("encoder.block", ""),),
        ("t5-xxl",),
        ("decoder", "lm_head", "encoder.embed_tokens"),
        (
            Keep("shared", _CTQ_GENERIC, "the token embedding (AVOID_KEY_NAMES 'shared')"),
            Keep("relative_attention_bias", _CTQ_GENERIC, "a bias table, not a linear"),
        ),
        (f"{TE_DETECT} (T5_XXL)", f"{CTQ} MODEL_FILTERS t5xxl"),
    ),
    Family(
        "qwen35",
        "Qwen3.5",
        "text-encoder",
        "qwen35",
        (
            ("model.language_model.layers.0.linear_attn.A_log",),
            ("model.layers.0.linear_attn.A_log",),
        ),
        (),
        _reads(
            ("hidden_size", "model.layers.0.input_layernorm.weight", 0),
            ("hidden_size", "model.language_model.layers.0.input_layernorm.weight", 0),
        ),
        (("model.layers", ""), ("visual.blocks", "visual")),
        ("qwen3.5-2b",),
        ("lm_head", "visual", "mtp."),
        (
            *_ctq(
                "qwen_vlm",
                ".layers.0.",
                "lm_head",
                "embed_tokens",
                "in_proj_a",
                "in_proj_b",
                "visual.",
            ),
        ),
        (f"{TE_DETECT} (QWEN35_*)", f"{CTQ} QWEN_VLM_AVOID_KEY_NAMES"),
        renames=(("model.language_model.", "model."), ("model.visual.", "visual.")),
    ),
    Family(
        "qwen3",
        "Qwen3",
        "text-encoder",
        "qwen3",
        (
            (
                "model.layers.0.post_attention_layernorm.weight",
                "model.layers.0.self_attn.q_norm.weight",
            ),
        ),
        (),
        _reads(("hidden_size", "model.layers.0.post_attention_layernorm.weight", 0)),
        (("model.layers", ""),),
        ("qwen3-4b",),
        ("lm_head",),
        (
            Keep("embed_tokens", _CTQ_GENERIC, "the token embedding"),
            Keep("lm_head", _CTQ_GENERIC, "the output head"),
        ),
        (f"{TE_DETECT} (QWEN3_*)", f"{CTQ} AVOID_KEY_NAMES"),
        (("hidden_size", (1024, 2048, 2560, 4096)),),
    ),
    Family(
        "mistral3",
        "Mistral 3",
        "text-encoder",
        "mistral3_24b",
        (("model.layers.0.post_attention_layernorm.weight",),),
        ("model.layers.0.self_attn.q_norm.weight",),
        _reads(("hidden_size", "model.layers.0.post_attention_layernorm.weight", 0)),
        (("model.layers", ""),),
        ("mistral3-24b",),
        ("lm_head", "multi_modal_projector", "vision_tower"),
        (
            Keep("embed_tokens", ("convert_to_quant --mistral",), "the token embedding"),
            Keep("lm_head", ("convert_to_quant --mistral",), "the output head"),
            Keep("multi_modal_projector", ("convert_to_quant --mistral",), "the vision projector"),
        ),
        (f"{TE_DETECT} (MISTRAL3_24B)", f"{CTQ} MODEL_FILTERS mistral"),
        (("hidden_size", (5120,)),),
    ),
)

BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}
