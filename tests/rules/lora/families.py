"""Stand-in bases of the families whose ComfyUI LoRA branch goes through a diffusers table
(Flux, SD3, AuraFlow, PixArt, Krea2, Lumina2/Z-Image) and LoRAs in those names, plus BFL
control and USO LoRAs: the layer names and logical shapes of each family (ComfyUI's model
classes; families/layouts.py for Flux, SD3.5 and Z-Image), reduced to one block of each kind
and a small hidden size (PixArt keeps 1152: ComfyUI fixes it).

Each stand-in gives: the family's model-config values ComfyUI's model object would carry
(`unet_config`, what model_lora_keys_unet reads), the base's quantized layers and its other
tensors (what family detection and the config read), and LoRA modules: diffusers name ->
the [N, K] the LoRA's factors make (a slice's rows for a fused weight).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from quantcheck.io.build import RawTensor, write_safetensors

from .pairs import lora_factors, quantized, raw, weights

#: family -> {"cls", "config", "layers", "extras", "lora", "prefixes"}
STANDINS: dict[str, dict[str, Any]] = {
    "flux": {
        "cls": "Flux",
        "config": {"depth": 1, "depth_single_blocks": 1, "hidden_size": 64},
        "extras": {"img_in.weight": (64, 64)},
        "layers": {
            "double_blocks.0.img_attn.qkv": (192, 64),
            "double_blocks.0.txt_attn.qkv": (192, 64),
            "double_blocks.0.img_attn.proj": (64, 64),
            "double_blocks.0.img_mlp.0": (256, 64),
            "single_blocks.0.linear1": (448, 64),
            "single_blocks.0.linear2": (64, 320),
            "final_layer.adaLN_modulation.1": (128, 64),
        },
        "lora": {
            "transformer_blocks.0.attn.to_q": (64, 64),
            "transformer_blocks.0.attn.to_k": (64, 64),
            "transformer_blocks.0.attn.to_v": (64, 64),
            "transformer_blocks.0.attn.add_k_proj": (64, 64),
            "transformer_blocks.0.attn.to_out.0": (64, 64),
            "transformer_blocks.0.ff.net.0.proj": (256, 64),
            "single_transformer_blocks.0.attn.to_q": (64, 64),
            "single_transformer_blocks.0.proj_mlp": (256, 64),
            "single_transformer_blocks.0.proj_out": (64, 320),
            "norm_out.linear": (128, 64),
        },
        "prefixes": ("transformer.", "lora_transformer_", ""),
    },
    "sd3": {
        "cls": "SD3",
        "config": {"depth": 2, "num_blocks": 1},
        "extras": {"x_embedder.proj.weight": (128, 16, 2, 2)},
        "layers": {
            "joint_blocks.0.x_block.attn.qkv": (384, 128),
            "joint_blocks.0.context_block.attn.qkv": (384, 128),
            "joint_blocks.0.x_block.attn.proj": (128, 128),
            "joint_blocks.0.x_block.mlp.fc1": (512, 128),
            "final_layer.adaLN_modulation.1": (256, 128),
        },
        "lora": {
            "transformer_blocks.0.attn.to_q": (128, 128),
            "transformer_blocks.0.attn.to_v": (128, 128),
            "transformer_blocks.0.attn.add_q_proj": (128, 128),
            "transformer_blocks.0.attn.to_out.0": (128, 128),
            "transformer_blocks.0.ff.net.0.proj": (512, 128),
            "norm_out.linear": (256, 128),
        },
        "prefixes": ("transformer.", "base_model.model.", "lora_transformer_"),
    },
    "auraflow": {
        "cls": "AuraFlow",
        "config": {"n_double_layers": 1, "n_layers": 2},
        "extras": {},
        "layers": {
            "double_layers.0.attn.w1q": (64, 64),
            "double_layers.0.attn.w2q": (64, 64),
            "single_layers.0.attn.w1q": (64, 64),
            "single_layers.0.mlp.c_fc1": (256, 64),
            "modF.1": (128, 64),
        },
        "lora": {
            "joint_transformer_blocks.0.attn.to_q": (64, 64),
            "joint_transformer_blocks.0.attn.add_q_proj": (64, 64),
            "single_transformer_blocks.0.attn.to_q": (64, 64),
            "single_transformer_blocks.0.ff.linear_1": (256, 64),
            "norm_out.linear": (128, 64),
        },
        "prefixes": ("transformer.",),
    },
    "pixart": {
        "cls": "PixArt",
        "config": {"depth": 1, "hidden_size": 1152},
        "extras": {"t_block.1.weight": (16, 16)},
        "layers": {
            "blocks.0.attn.qkv": (3456, 1152),
            "blocks.0.cross_attn.kv_linear": (2304, 1152),
            "blocks.0.cross_attn.q_linear": (1152, 1152),
        },
        "lora": {
            "transformer_blocks.0.attn1.to_k": (1152, 1152),
            "transformer_blocks.0.attn2.to_q": (1152, 1152),
            "transformer_blocks.0.attn2.to_v": (1152, 1152),
        },
        "prefixes": ("transformer.", "unet.base_model.model."),
    },
    "krea2": {
        "cls": "Krea2",
        "config": {"layers": 1},
        "extras": {"txtfusion.projector.weight": (64, 4)},
        "layers": {
            "blocks.0.attn.wq": (64, 64),
            "blocks.0.mlp.up": (256, 64),
            "txtfusion.layerwise_blocks.0.attn.wq": (64, 64),
            "last.linear": (64, 64),
        },
        "lora": {
            "transformer_blocks.0.attn.to_q": (64, 64),
            "transformer_blocks.0.ff.up": (256, 64),
            "text_fusion.layerwise_blocks.0.attn.to_q": (64, 64),
            "final_layer.linear": (64, 64),
        },
        "prefixes": ("diffusion_model.", "lycoris_", ""),
    },
    "lumina2": {
        "cls": "Lumina2",
        "config": {"n_layers": 1, "dim": 64},
        "extras": {"cap_embedder.1.weight": (64, 32)},
        "layers": {
            "layers.0.attention.qkv": (192, 64),
            "layers.0.attention.out": (64, 64),
            "layers.0.feed_forward.w1": (256, 64),
            "context_refiner.0.attention.qkv": (192, 64),
        },
        "lora": {
            "layers.0.attention.to_q": (64, 64),
            "layers.0.attention.to_k": (64, 64),
            "layers.0.attention.to_out.0": (64, 64),
            "layers.0.feed_forward.w1": (256, 64),
            "context_refiner.0.attention.to_v": (64, 64),
        },
        "prefixes": ("diffusion_model.", "transformer.", ""),
    },
}


def family_base(path: Path, family: str, fmt: str) -> None:
    """The family's stand-in base, its layers in `fmt` (its extras BF16)."""
    import ml_dtypes

    s = STANDINS[family]
    tensors: list[RawTensor] = []
    for i, (name, shape) in enumerate(s["extras"].items()):
        a = (np.random.default_rng(90 + i).standard_normal(shape) * 0.02).astype(np.float32)
        tensors.append(raw(name, a.astype(ml_dtypes.bfloat16)))
    for i, (p, (n, k)) in enumerate(s["layers"].items()):
        tensors += quantized(p, weights(n, k, 200 + i), fmt)
    write_safetensors(path, tensors)


def family_lora(
    path: Path,
    family: str,
    prefix: str,
    *,
    rank: int = 4,
    size: float = 0.05,
    extra: int = 0,
    only: tuple[str, ...] = (),
) -> list[str]:
    """A LoRA of the family's diffusers names under `prefix` ("." -> "_" for the underscore
    forms), lora_A/lora_B (`only`: just those of its modules); `extra` more modules the base
    does not have. Its module names."""
    s = STANDINS[family]
    modules = {d: nk for d, nk in s["lora"].items() if not only or d in only}
    for j in range(extra):
        modules[f"transformer_blocks.{7 + j}.attn.to_q"] = next(iter(s["lora"].values()))
    out: list[RawTensor] = []
    names = []
    for i, (d, (n, k)) in enumerate(modules.items()):
        x = prefix + (d.replace(".", "_") if prefix.endswith("_") else d)
        up, down = lora_factors(n, k, rank, 500 + i, size)
        out += [raw(x + ".lora_B.weight", up), raw(x + ".lora_A.weight", down)]
        names.append(x)
    write_safetensors(path, out)
    return names


def bfl_control_lora(path: Path, rank: int = 4) -> None:
    """A BFL Flux control LoRA for the Flux stand-in (hidden 64): img_in widened to 128 input
    channels (its reshape), a double block's qkv, a key-norm scale (set_weight) and a bias
    diff."""
    up, down = lora_factors(64, 128, rank, 1)
    qup, qdown = lora_factors(192, 64, rank, 2)
    write_safetensors(
        path,
        [
            raw("img_in.lora_A.weight", down),
            raw("img_in.lora_B.weight", up),
            raw("img_in.lora_B.bias", np.zeros(64, np.float32)),
            raw("double_blocks.0.img_attn.qkv.lora_A.weight", qdown),
            raw("double_blocks.0.img_attn.qkv.lora_B.weight", qup),
            raw("single_blocks.0.norm.key_norm.scale", np.ones(16, np.float32)),
        ],
    )


def uso_lora(path: Path, rank: int = 4) -> None:
    """A USO LoRA's names (their detection keys in blocks 18 and 37 included) for the Flux
    stand-in: block 0's qkv_lora1 / proj_lora1 and single block 0's qkv_lora (a slice of
    linear1: its first three hidden sizes)."""
    out: list[RawTensor] = []
    for i, (name, n, k) in enumerate(
        (
            ("double_blocks.0.processor.qkv_lora1", 192, 64),
            ("double_blocks.0.processor.proj_lora1", 64, 64),
            ("single_blocks.0.processor.qkv_lora", 192, 64),
            ("double_blocks.18.processor.qkv_lora2", 192, 64),
            ("single_blocks.37.processor.qkv_lora", 192, 64),
        )
    ):
        up, down = lora_factors(n, k, rank, 30 + i)
        out += [raw(name + ".up.weight", up), raw(name + ".down.weight", down)]
    write_safetensors(path, out)


def unet_base(path: Path, fmt: str) -> None:
    """A UNet (SD1.x/SDXL-named) stand-in: what ComfyUI's detection reads first and one
    transformer projection in `fmt`."""
    import ml_dtypes

    conv = (np.random.default_rng(5).standard_normal((64, 4, 3, 3)) * 0.02).astype(np.float32)
    write_safetensors(
        path,
        [
            raw("input_blocks.0.0.weight", conv.astype(ml_dtypes.bfloat16)),
            *quantized("input_blocks.1.1.proj_in", weights(64, 64, 3), fmt),
        ],
    )


def unet_lora(path: Path, diffusers: bool) -> None:
    """One module on that projection: diffusers UNet names (down_blocks...) or kohya's."""
    name = "down_blocks_0_attentions_0_proj_in" if diffusers else "input_blocks_1_1_proj_in"
    up, down = lora_factors(64, 64, 4, 11)
    x = "lora_unet_" + name
    write_safetensors(path, [raw(x + ".lora_up.weight", up), raw(x + ".lora_down.weight", down)])
