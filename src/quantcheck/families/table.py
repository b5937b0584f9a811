"""FAMILIES: the model families quantcheck recognises, as data — one entry per family.

Each entry says how a checkpoint of the family is recognised (the key tests of ComfyUI's own
`comfy/model_detection.py` `detect_unet_config` @783545f6, or `comfy/sd.py` `detect_te_model`
for text encoders), which stored shapes ComfyUI reads to compute the model's config, its
numbered block groups, its reference layouts (`layouts.py`, generated from ComfyUI's own
model classes by tools/family_keys.py), the modules a variant may add or drop, the layers
the family's producers keep in high precision, with who keeps them and why, and the exact
quantized-layer sets of released files (`topologies`). Adding a family is one entry here (and a
layout plus cases in tests/families/).

The sources the entries cite are the constants below (file @ commit, or package version);
each entry's `sources` and each `Keep.producers` name them.
"""

from __future__ import annotations

from quantcheck._record import record

#: ComfyUI's model detection and text-encoder detection.
DETECT = "ComfyUI 783545f6 comfy/model_detection.py detect_unet_config"
TE_DETECT = "ComfyUI 783545f6 comfy/sd.py detect_te_model"
#: convert_to_quant's filters: the newest wheel on PyPI, 1.3.4, was read (it has no SD3 filter).
CTQ = "convert_to_quant 1.3.4 (PyPI) convert_to_quant/constants.py"
#: ComfyUI-GGUF's converter: `keys_hiprec` (kept F32: nn.Parameters that cannot load from a
#: quantized version, or numerics) and `keys_noquant` (kept in their source precision).
GGUF = "city96/ComfyUI-GGUF @8e0d9cad tools/convert.py keys_hiprec/keys_noquant"
#: comfy-quants' static DiT contracts (`kept_component`: "kept high precision"). Upstream
#: Comfy-Org/comfy-quants @5d8eaaec comfy/artifact_contracts.py registers the flux, flux2 and
#: ltxv adapters; the adapters' files were read in a fork, the only copy in the code index.
CQ_FLUX = "comfy-quants model_adapters/flux.py (fork HK416-TYPED/comfy-quants @828b950d)"
CQ_FLUX2 = "comfy-quants model_adapters/flux2.py (fork HK416-TYPED/comfy-quants @828b950d)"
CQ_LTX2 = "comfy-quants model_adapters/ltx2.py (fork HK416-TYPED/comfy-quants @2b30d749)"
#: ComfyUI-INT8-Fast's MiniMax H3 entry and its "skip edges" recipe, as the project's spec
#: quotes it (the PR's code is not in the code index).
INT8FAST = "BobJohnson24/ComfyUI-INT8-Fast PR #99 (as quoted in spec gpu-lora-families §2d)"
#: musubi-tuner PR #1024 (merged 2026-08-08): its design note's header audit of Comfy-Org's
#: five official MiniMax H3 INT8 ConvRot files and the exact topologies its loaders validated
#: (the PR branch's copies in the code index; the index names no commit for them).
MUSUBI_H3 = (
    "kohya-ss/musubi-tuner PR #1024 docs/superpowers/specs/"
    "2026-08-07-minimax-h3-int8-convrot-design.md §5.2-5.4, §11.5 (header audit)"
)
MUSUBI_H3_DIT = (
    "kohya-ss/musubi-tuner PR #1024 tests/test_minimax_h3_model.py "
    "(_validate_h3_convrot_topology: test_full_classifier_rejects_nonpublished_convrot_layer, "
    "..._missing_published_convrot_layer, test_published_convrot_topology_requires_released_"
    "group_sizes)"
)
MUSUBI_H3_TE = (
    "kohya-ss/musubi-tuner PR #1024 src/musubi_tuner/minimax_h3/text_encoder.py "
    "_validate_h3_text_encoder_convrot_topology"
)


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
    `producers` keep in high precision, and why. `{last}` in a pattern stands for the last
    block of the family's first block group, counted in the checkpoint (convert_to_quant's
    `exclude_final_language_layer` counts it from the tensor names the same way)."""

    pattern: str
    producers: tuple[str, ...]
    reason: str


@record
class Topology:
    """A released file's exact quantized-layer set: in blocks 0..`blocks`-1 of group `group`,
    the modules `modules` (module inside the block, ConvRot group size) are quantized in
    format `fmt` with those group sizes, and no other layer of the file is. `needs` / `lacks`:
    tensors the variant has / has not (what tells its files apart)."""

    name: str
    #: what QC864 calls a file that matches ("the official ... topology")
    title: str
    group: str
    blocks: int
    modules: tuple[tuple[str, int], ...]
    fmt: str
    #: who checks files against it ("as musubi-tuner PR #1024 checks it")
    checked_by: str
    sources: tuple[str, ...]
    needs: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()

    @property
    def layers(self) -> int:
        return self.blocks * len(self.modules)


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
    #: the exact quantized-layer sets of released files (QC864 names a file that matches)
    topologies: tuple[Topology, ...] = ()


def _reads(*rows: tuple[str, str, int] | tuple[str, str, int, int]) -> tuple[ShapeRead, ...]:
    return tuple(ShapeRead(*row) for row in rows)


#: Layers convert_to_quant's generic AVOID_KEY_NAMES keeps for every filter (the entries that
#: name real layers of these families; "norm" and "bias" are never quantized anyway).
_CTQ_GENERIC = ("convert_to_quant (AVOID_KEY_NAMES)",)
_QUALITY = "quality"
_PARAM = "an nn.Parameter ComfyUI cannot load from a quantized version"
#: ComfyUI-GGUF's reason for MiniMax H3's keys_hiprec
_H3_DIRECT = (
    "used directly by the conditioning and output paths, not as an ordinary block linear: "
    "kept for numerical stability"
)
#: The linears of a MiniMax H3 block that every official INT8 ConvRot file quantizes
_H3_BLOCK_LINEARS = ("attn.qkv_proj", "attn.out_proj", "mlp.fc1", "mlp.fc2")
_MUSUBI_CHECKS = "as musubi-tuner PR #1024 checks it"
#: ComfyUI-GGUF's reason for LTX's keys_noquant
_LTX_BF16 = "LTX's own INT8 ConvRot checkpoints leave these projections in BF16"


def _keep(reason: str, *producers: str, patterns: tuple[str, ...]) -> tuple[Keep, ...]:
    return tuple(Keep(p, producers, reason) for p in patterns)


def _ctq(flag: str, *patterns: str, reason: str = _QUALITY) -> tuple[Keep, ...]:
    return _keep(reason, f"convert_to_quant --{flag}", patterns=patterns)


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
        # none of convert_to_quant 1.3.4's MODEL_FILTERS, ComfyUI-GGUF @8e0d9cad's ModelSD3
        # (no keys_hiprec) or comfy-quants @5d8eaaec's contracts covers SD3
        (),
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
        _keep(
            _QUALITY,
            "convert_to_quant --flux2",
            "comfy-quants (flux2 adapter)",
            patterns=(
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
            f"{CQ_FLUX2} _extra_components",
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
        _keep(
            "the embedders and the final layer",
            "comfy-quants (flux adapter)",
            patterns=("img_in", "txt_in", "vector_in", "time_in", "guidance_in", "final_layer"),
        ),
        (f"{DETECT} (flux branch)", f"{CQ_FLUX} _extra_components"),
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
            *_keep(
                _H3_DIRECT,
                "convert_to_quant --minimaxh3",
                "ComfyUI-GGUF (keys_hiprec)",
                patterns=("audio_patch_proj", "final_layer", "video_patch_proj"),
            ),
            *_keep(
                "BF16 in the reference checkpoint: quantizing them costs quality, saves little",
                "convert_to_quant --minimaxh3",
                "ComfyUI-GGUF (keys_noquant)",
                patterns=("condition_proj", "token_refiner"),
            ),
            *_ctq("minimaxh3", "time_embedder"),
            Keep("adaln_proj", ("ComfyUI-GGUF (keys_hiprec)", "ComfyUI-INT8-Fast"), _H3_DIRECT),
            Keep("adaln_t_table", ("ComfyUI-GGUF (keys_hiprec)",), _H3_DIRECT),
            Keep("modulation", ("ComfyUI-GGUF (keys_hiprec)",), _H3_DIRECT),
        ),
        (
            f"{DETECT} (minimax_h3 branch)",
            f"{CTQ} MINIMAXH3_LAYER_KEYNAMES",
            f"{GGUF} ModelMinimaxH3",
            INT8FAST,
            MUSUBI_H3,
        ),
        topologies=(
            Topology(
                "minimax-h3-full-int8-convrot",
                "the official MiniMax H3 full INT8 ConvRot topology",
                "blocks",
                50,
                (*((m, 256) for m in _H3_BLOCK_LINEARS), ("adaln_proj.linear", 64)),
                "int8_tensorwise",
                _MUSUBI_CHECKS,
                (MUSUBI_H3, MUSUBI_H3_DIT),
                lacks=("adaln_t_table",),
            ),
            Topology(
                "minimax-h3-pruned-int8-convrot",
                "the official MiniMax H3 pruned INT8 ConvRot topology",
                "blocks",
                50,
                tuple((m, 256) for m in _H3_BLOCK_LINEARS),
                "int8_tensorwise",
                _MUSUBI_CHECKS,
                (MUSUBI_H3, MUSUBI_H3_DIT),
                needs=("adaln_t_table",),
            ),
        ),
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
            *_keep(
                _PARAM,
                "convert_to_quant --ltxv2",
                "ComfyUI-GGUF (keys_hiprec)",
                "comfy-quants (ltx2 adapter)",
                patterns=("scale_shift_table",),
            ),
            *_keep(
                _LTX_BF16,
                "convert_to_quant --ltxv2",
                "ComfyUI-GGUF (keys_noquant)",
                "comfy-quants (ltx2 adapter)",
                patterns=("adaln_single", "patchify_proj", "proj_out"),
            ),
            *_keep(
                _LTX_BF16,
                "convert_to_quant --ltxv2",
                "ComfyUI-GGUF (keys_noquant)",
                patterns=("to_gate_logits",),
            ),
            *_keep(
                _QUALITY,
                "convert_to_quant --ltxv2",
                "comfy-quants (ltx2 adapter)",
                patterns=("embeddings_connector",),
            ),
            Keep("learnable_registers", ("ComfyUI-GGUF (keys_hiprec)",), _PARAM),
            *_keep(
                "the official Lightricks FP8/NVFP4 releases keep the first two and last two "
                "blocks in BF16",
                "convert_to_quant --ltxv2",
                "comfy-quants (ltx2 adapter)",
                patterns=(
                    "transformer_blocks.0.",
                    "transformer_blocks.1.",
                    "transformer_blocks.46.",
                    "transformer_blocks.47.",
                ),
            ),
        ),
        (
            f"{DETECT} (ltxv branch, audio_adaln_single: ltxav)",
            f"{CTQ} LTXV2_LAYER_KEYNAMES",
            f"{GGUF} ModelLTXV",
            f"{CQ_LTX2} _extra_components, OFFICIAL_KEPT_BLOCKS",
        ),
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
            Keep(".modulation", ("ComfyUI-GGUF (keys_hiprec)", *_CTQ_GENERIC), _PARAM),
        ),
        (
            f"{DETECT} (wan2.1 branch)",
            f"{CTQ} WAN_LAYER_KEYNAMES, AVOID_KEY_NAMES",
            f"{GGUF} ModelWan",
        ),
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
            Keep("embed_tokens", _CTQ_GENERIC, "the token embedding"),
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
            Keep(
                ".layers.{last}.",
                ("convert_to_quant --qwen_vlm",),
                "the last language layer (exclude_final_language_layer)",
            ),
        ),
        (
            f"{TE_DETECT} (QWEN35_*)",
            f"{CTQ} MODEL_FILTERS qwen_vlm (QWEN_VLM_AVOID_KEY_NAMES, "
            "exclude_final_language_layer)",
        ),
        renames=(("model.language_model.", "model."), ("model.visual.", "visual.")),
    ),
    Family(
        "qwen3vl_32b",
        "Qwen3-VL-32B (MiniMax H3)",
        "text-encoder",
        "qwen3vl_32b",
        (
            (
                "visual.deepstack_merger_list.0.norm.weight",
                "model.layers.49.self_attn.q_proj.weight",
            ),
        ),
        (),
        _reads(("hidden_size", "model.layers.0.post_attention_layernorm.weight", 0)),
        (("model.layers", ""), ("visual.blocks", "visual")),
        ("qwen3vl-32b",),
        ("lm_head", "model.norm"),
        (
            *_keep(
                "kept BF16 in the official INT8 ConvRot file",
                "Comfy-Org (the official INT8 ConvRot file)",
                patterns=("embed_tokens", "visual."),
            ),
            Keep("lm_head", _CTQ_GENERIC, "the output head"),
        ),
        (f"{TE_DETECT} (QWEN3VL_32B)", MUSUBI_H3, MUSUBI_H3_TE),
        (("hidden_size", (5120,)),),
        topologies=(
            Topology(
                "minimax-h3-qwen3vl-int8-convrot",
                "the official MiniMax H3 Qwen3-VL-32B INT8 ConvRot topology",
                "model.layers",
                50,
                tuple(
                    (m, 256)
                    for m in (
                        "self_attn.q_proj",
                        "self_attn.k_proj",
                        "self_attn.v_proj",
                        "self_attn.o_proj",
                        "mlp.gate_proj",
                        "mlp.up_proj",
                        "mlp.down_proj",
                    )
                ),
                "int8_tensorwise",
                _MUSUBI_CHECKS,
                (MUSUBI_H3, MUSUBI_H3_TE),
            ),
        ),
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
