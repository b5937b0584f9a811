"""Write tests/data/families/<name>.json (the state-dict keys and shapes of each model family)
and src/quantcheck/families/layouts.py (their modules by block group).

Each list is what ComfyUI's own model class (comfy/ldm/<family>/... or comfy/text_encoders/...
at upstream ComfyUI 783545f6) holds when it is built with the family's published config on
torch's meta device: no weights are read or allocated. The ComfyUI files are read from the
ComfyUI git mirror (`git show 783545f6:PATH`) into a scratch folder and imported there; the
runtime pieces a constructor never calls (attention kernels, model management, the patcher,
einops) are stubs, and `operations` is plain torch.nn. Nothing of ComfyUI is written into this
repository: only the key names, shapes and where each config came from.

    python tools/family_keys.py [--mirror GIT_DIR] [--layouts-only] [NAME ...]
    ruff format src/quantcheck/families/layouts.py

Run with torch installed (the project's .venv); the output is committed test data.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "families"
LAYOUTS = ROOT / "src" / "quantcheck" / "families" / "layouts.py"
#: A numbered block: `<group>.<index>.<module>` where the group ends in one of these.
BLOCK_GROUP = re.compile(r"^(.*?(?:blocks|layers|refiner|block))\.(\d+)\.(.+)$")
COMMIT = "783545f689a0af730065994b46b382ae24844c99"
MIRROR = "/work/.mirror/patientx+ComfyUI-Zluda/repo"
SGLANG = "sglang 0.5.23 (PyPI wheel) sglang/multimodal_gen/configs/models/dits"
DETECT = "ComfyUI 783545f6 comfy/model_detection.py detect_unet_config"

FLUX2_FIXED = {
    "axes_dim": [32, 32, 32, 32],
    "num_heads": 48,
    "mlp_ratio": 3.0,
    "theta": 2000,
    "out_channels": 128,
    "global_modulation": True,
    "mlp_silu_act": True,
    "qkv_bias": False,
    "ops_bias": False,
    "default_ref_method": "index",
    "ref_index_scale": 10.0,
    "txt_ids_dims": [3],
    "patch_size": 1,
    "in_channels": 128,
    "vec_in_dim": None,
    "guidance_embed": True,
}

#: name -> (module path under comfy/, class, constructor kwargs, where the config comes from)
MODELS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "flux1-dev": (
        "ldm/flux/model.py",
        "Flux",
        {
            "image_model": "flux",
            "in_channels": 16,
            "patch_size": 2,
            "out_channels": 16,
            "vec_in_dim": 768,
            "context_in_dim": 4096,
            "hidden_size": 3072,
            "mlp_ratio": 4.0,
            "num_heads": 24,
            "depth": 19,
            "depth_single_blocks": 38,
            "axes_dim": [16, 56, 56],
            "theta": 10000,
            "qkv_bias": True,
            "guidance_embed": True,
            "txt_ids_dims": [],
        },
        f"{SGLANG}/flux.py FluxArchConfig defaults (FLUX.1-dev: 19 double + 38 single "
        "blocks, 24 heads x 128, joint_attention_dim 4096, pooled 768, guidance); the fixed "
        f"fields as {DETECT} sets them for flux",
    ),
    "chroma": (
        "ldm/chroma/model.py",
        "Chroma",
        {
            "image_model": "chroma",
            "in_channels": 64,
            "out_channels": 64,
            "context_in_dim": 4096,
            "hidden_size": 3072,
            "mlp_ratio": 4.0,
            "num_heads": 24,
            "depth": 19,
            "depth_single_blocks": 38,
            "axes_dim": [16, 56, 56],
            "theta": 10000,
            "qkv_bias": True,
            "in_dim": 64,
            "out_dim": 3072,
            "hidden_dim": 5120,
            "n_layers": 5,
            "patch_size": 2,
            "txt_ids_dims": [],
            "vec_in_dim": None,
        },
        f"{DETECT} (the chroma branch fixes in_channels 64, in_dim 64, out_dim 3072, "
        "hidden_dim 5120, n_layers 5) on the FLUX.1 trunk (19 + 38 blocks, hidden 3072)",
    ),
    "flux2-dev": (
        "ldm/flux/model.py",
        "Flux",
        {
            **FLUX2_FIXED,
            "image_model": "flux2",
            "hidden_size": 6144,
            "context_in_dim": 15360,
            "depth": 8,
            "depth_single_blocks": 48,
        },
        f"{DETECT} flux2 branch (48 heads, mlp 3.0, patch 1, out 128); FLUX.2-dev 8 double + "
        "48 single blocks, 48 heads x 128 = 6144 (mflux flux2 model docstring, code index); "
        "context 15360 = 3 stacked Mistral-3 24B hidden states of 5120 "
        "(comfy/text_encoders/llama.py Mistral3Small24BConfig hidden_size 5120)",
    ),
    "flux2-klein-4b": (
        "ldm/flux/model.py",
        "Flux",
        {
            **FLUX2_FIXED,
            "image_model": "flux2",
            "num_heads": 24,
            "guidance_embed": False,
            "hidden_size": 3072,
            "context_in_dim": 7680,
            "depth": 5,
            "depth_single_blocks": 20,
        },
        f"{DETECT} flux2 branch; FLUX.2 klein-4b 5 joint + 20 single blocks (a FLUX.2 "
        "variants docstring in the code index); hidden 3072; context 7680 = 3 stacked "
        "Qwen3-4B hidden states of 2560 (comfy/text_encoders/llama.py Qwen3_4BConfig)",
    ),
    "qwen-image": (
        "ldm/qwen_image/model.py",
        "QwenImageTransformer2DModel",
        {
            "patch_size": 2,
            "in_channels": 64,
            "out_channels": 16,
            "num_layers": 60,
            "attention_head_dim": 128,
            "num_attention_heads": 24,
            "joint_attention_dim": 3584,
            "image_model": "qwen_image",
        },
        "Qwen-Image: 60 joint blocks, 24 heads x 128 = 3072 (exo-explore/exo "
        "src/exo/worker/engines/image/models/qwen/config.py, code index); joint_attention_dim "
        "3584 = Qwen2.5-VL-7B hidden (comfy/text_encoders/llama.py Qwen25_7BVLI_Config); "
        f"in_channels 64 as {DETECT} reads img_in",
    ),
    "wan2.1-t2v-14b": (
        "ldm/wan/model.py",
        "WanModel",
        {
            "model_type": "t2v",
            "patch_size": (1, 2, 2),
            "in_dim": 16,
            "dim": 5120,
            "ffn_dim": 13824,
            "freq_dim": 256,
            "text_dim": 4096,
            "out_dim": 16,
            "num_heads": 40,
            "num_layers": 40,
            "image_model": "wan2.1",
        },
        f"{SGLANG}/wanvideo.py WanVideoArchConfig defaults (40 heads x 128 = 5120, ffn "
        "13824, 40 layers, text_dim 4096, in 16)",
    ),
    "wan2.1-i2v-14b": (
        "ldm/wan/model.py",
        "WanModel",
        {
            "model_type": "i2v",
            "patch_size": (1, 2, 2),
            "in_dim": 36,
            "dim": 5120,
            "ffn_dim": 13824,
            "freq_dim": 256,
            "text_dim": 4096,
            "out_dim": 16,
            "num_heads": 40,
            "num_layers": 40,
            "image_model": "wan2.1",
        },
        f"{SGLANG}/wanvideo.py defaults as wan2.1-t2v-14b; i2v: in_dim 36 (16 latent + 20 "
        "image-condition channels) and the CLIP image embedder (model_type i2v)",
    ),
    "z-image": (
        "ldm/lumina/model.py",
        "NextDiT",
        {
            "patch_size": 2,
            "in_channels": 16,
            "dim": 3840,
            "n_layers": 30,
            "n_refiner_layers": 2,
            "n_heads": 30,
            "n_kv_heads": 30,
            "ffn_dim_multiplier": 8.0 / 3.0,
            "qk_norm": True,
            "cap_feat_dim": 2560,
            "axes_dims": [32, 48, 48],
            "axes_lens": [1536, 512, 512],
            "rope_theta": 256.0,
            "z_image_modulation": True,
            "time_scale": 1000.0,
            "pad_tokens_multiple": 32,
            "image_model": "lumina2",
        },
        f"{SGLANG}/zimage.py ZImageArchConfig defaults (dim 3840, 30 layers, 2 refiner "
        f"layers, 30 heads, cap_feat_dim 2560); the fixed fields as {DETECT} sets them for "
        "dim 3840",
    ),
    "minimax-h3": (
        "ldm/minimax/model.py",
        "MiniMaxH3Model",
        {
            "num_layers": 50,
            "token_refiner_num_layers": 2,
            "hidden_size": 5376,
            "num_attention_heads": 56,
            "attention_head_dim": 128,
            "ffn_hidden_size": 14336,
            "latents_dim": 24,
            "audio_latents_dim": 32,
            "text_dim": 5120,
            "timestep_input_dim": 256,
            "time_embed_hidden_size": 5376,
            "time_embed_dim": 2688,
            "rope_inv_freq_len": 16,
            "image_model": "minimax_h3",
        },
        f"{SGLANG}/minimax_h3.py MiniMaxH3DiTArchConfig defaults (50 layers, 2 refiner "
        "layers, hidden 5376, 56 heads x 128, ffn 14336, latents 24, audio 32, text 5120, time "
        "embedder 256 -> 5376 -> 2688, rope 16)",
    ),
    "ltx-2": (
        "ldm/lightricks/av_model.py",
        "LTXAVModel",
        {"image_model": "ltxav"},
        f"{SGLANG}/ltx_2.py LTX2ArchConfig defaults (48 layers, 32 heads x 128, "
        "cross_attention_dim 4096, caption 3840, audio 32 heads x 64, audio cross 2048), the "
        "same as LTXAVModel's own defaults at the pin",
    ),
    "hunyuanvideo-1.5": (
        "ldm/hunyuan_video/model.py",
        "HunyuanVideo",
        {
            "image_model": "hunyuan_video",
            "in_channels": 65,
            "out_channels": 32,
            "vec_in_dim": None,
            "context_in_dim": 3584,
            "hidden_size": 2048,
            "mlp_ratio": 4.0,
            "num_heads": 16,
            "depth": 54,
            "depth_single_blocks": 0,
            "axes_dim": [16, 56, 56],
            "theta": 256,
            "patch_size": [1, 1, 1],
            "qkv_bias": True,
            "guidance_embed": False,
            "byt5": True,
            "meanflow": False,
            "use_cond_type_embedding": True,
            "vision_in_dim": 1152,
            "meanflow_sum": True,
        },
        "kohya-ss/musubi-tuner src/musubi_tuner/hunyuan_video_1_5/hunyuan_video_1_5_models.py "
        "(code index, 6a1b064a) HunyuanVideo_1_5_DiffusionTransformer fixed architecture: patch "
        "[1,1,1], 32 latent channels, hidden 2048, 16 heads, 54 double blocks, no single, text "
        "3584, vision 1152, ByT5, rope [16,56,56] theta 256; vision_in_dim 1152 is also "
        "ComfyUI's HunyuanVideo15 unet_config (comfy/supported_models.py); img_in takes 65 "
        "channels, 'noise 32 img cond 32 + mask 1' (ComfyUI 783545f6 comfy/model_base.py "
        "HunyuanVideo15.concat_cond; comfy/latent_formats.py HunyuanVideo15 latent_channels "
        "32; the PatchEmbed concat_condition in_chans * 2 + 1 of Tencent's and musubi's "
        "HunyuanVideo 1.5 modules), out 32",
    ),
    "sd3.5-large": (
        "ldm/modules/diffusionmodules/mmdit.py",
        "MMDiT",
        {
            "input_size": None,
            "patch_size": 2,
            "in_channels": 16,
            "depth": 38,
            "adm_in_channels": 2048,
            "context_embedder_config": {
                "target": "torch.nn.Linear",
                "params": {"in_features": 4096, "out_features": 2432},
            },
            "out_channels": 16,
            "pos_embed_max_size": 192,
            "num_patches": 36864,
            "qk_norm": "rms",
            "pos_embed_scaling_factor": None,
        },
        f"{DETECT} mmdit branch (hidden = 64 x depth, qk_norm from ln_q); SD3.5 Large: 38 "
        "joint blocks (diffusers 0.42.1 (PyPI) loaders/single_file_utils.py "
        "CHECKPOINT_KEY_NAMES sd35_large = joint_blocks.37.x_block.mlp.fc1.weight), head dim "
        "64 so hidden 2432, pooled 2048 and T5 context 4096 (diffusers 0.42.1 "
        "models/transformers/transformer_sd3.py SD3Transformer2DModel defaults; sglang 0.5.23 "
        "configs/models/dits/stablediffusion3.py, 'applicable to SD3-medium, SD3.5-medium, "
        "SD3.5-large'), in/out 16; pos_embed 192 x 192 [GUESS: SD3.5 Large's published "
        "transformer/config.json pos_embed_max_size, seen only in third-party copies]",
    ),
    "t5-xxl": (
        "text_encoders/t5.py",
        "T5",
        {"config": "comfy/text_encoders/t5_config_xxl.json"},
        "ComfyUI 783545f6 comfy/text_encoders/t5_config_xxl.json (Google T5 v1.1 XXL encoder: "
        "24 layers, d_model 4096, d_ff 10240, 64 heads x 64, vocab 32128)",
    ),
    "qwen3-4b": (
        "text_encoders/llama.py",
        "Qwen3_4B",
        {},
        "ComfyUI 783545f6 comfy/text_encoders/llama.py Qwen3_4BConfig defaults (the Z-Image "
        "and FLUX.2 klein-4b text encoder)",
    ),
    "mistral3-24b": (
        "text_encoders/llama.py",
        "Mistral3Small24B",
        {},
        "ComfyUI 783545f6 comfy/text_encoders/llama.py Mistral3Small24BConfig defaults "
        "(40 layers, hidden 5120, 32 heads / 8 KV heads: the FLUX.2-dev text encoder)",
    ),
    "qwen3vl-32b": (
        "text_encoders/minimax.py",
        "MiniMaxQwen3VL",
        {},
        "ComfyUI 783545f6 comfy/text_encoders/llama.py Qwen3VL_32BConfig defaults (the MiniMax "
        "H3 text encoder: Qwen3-VL-32B truncated to 50 layers, hidden 5120, no final norm, no "
        "lm_head) and comfy/text_encoders/qwen3vl.py QWEN3VL_VISION qwen3vl_32b (hidden 1152, "
        "depth 27)",
    ),
    "qwen3.5-2b": (
        "text_encoders/qwen35.py",
        "Qwen35",
        {},
        "ComfyUI 783545f6 comfy/text_encoders/qwen35.py Qwen35Config defaults (hidden 2048, "
        "24 layers, linear-attention DeltaNet layers and full-attention layers, vision tower)",
    ),
}


class _Anything(types.ModuleType):
    """A stub module: every attribute is a do-nothing callable class."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__init__": lambda self, *a, **k: None})


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    import importlib.machinery

    module = _Anything(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    parent, _, leaf = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], leaf, module)
    return module


def _operations() -> Any:
    import torch

    nn = torch.nn
    return types.SimpleNamespace(
        Linear=nn.Linear,
        Conv1d=nn.Conv1d,
        Conv2d=nn.Conv2d,
        Conv3d=nn.Conv3d,
        LayerNorm=nn.LayerNorm,
        GroupNorm=nn.GroupNorm,
        RMSNorm=nn.RMSNorm,
        Embedding=nn.Embedding,
    )


def _show(mirror: str, rel: str) -> bytes:
    return subprocess.run(
        ["git", "-C", mirror, "show", f"{COMMIT}:{rel}"], capture_output=True, check=True
    ).stdout


def _extract(mirror: str, into: Path) -> None:
    """comfy/ldm and comfy/text_encoders at the pin, from the git mirror."""
    listing = subprocess.run(
        ["git", "-C", mirror, "ls-tree", "-r", "--name-only", COMMIT, "comfy/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in listing:
        if not rel.endswith(".py") or not rel.startswith(("comfy/ldm/", "comfy/text_encoders/")):
            continue
        text = subprocess.run(
            ["git", "-C", mirror, "show", f"{COMMIT}:{rel}"],
            capture_output=True,
            check=True,
        ).stdout
        dest = into / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(text)
    for folder in (into / "comfy", *(p for p in (into / "comfy").rglob("*") if p.is_dir())):
        (folder / "__init__.py").touch(exist_ok=True)


def _install(scratch: Path) -> None:
    import torch

    package = types.ModuleType("comfy")
    package.__path__ = [str(scratch / "comfy")]
    sys.modules["comfy"] = package
    for name in (
        "comfy.model_management",
        "comfy.quant_ops",
        "comfy.patcher_extension",
        "comfy.model_prefetch",
        "comfy.utils",
        "comfy.memory_management",
        "comfy.rmsnorm",
        "comfy.cli_args",
        "comfy.ldm.modules.attention",
        "einops",
        "comfy_kitchen",
        "PIL",
        "tqdm",
        "transformers",
        "comfy.samplers",
        "comfy.clip_model",
        "PIL.Image",
        "comfy.sd1_clip",
        "comfy.text_encoders.sd1_clip",
    ):
        _stub(name)
    ops = _operations()
    _stub("comfy.ops", disable_weight_init=ops, manual_cast=ops, operations=ops)
    sys.modules["comfy.rmsnorm"].__dict__["RMSNorm"] = torch.nn.RMSNorm
    sys.path.insert(0, str(scratch))


def build(name: str) -> dict[str, Any]:
    """Build family `name` on the meta device and list its state dict."""
    import importlib

    import torch

    rel, cls, kwargs, source = MODELS[name]
    module = importlib.import_module("comfy." + rel[: -len(".py")].replace("/", "."))
    with torch.device("meta"):
        if rel.startswith("text_encoders/"):
            config = {}
            if "config" in kwargs:
                config = json.loads(_show(MIRROR, kwargs["config"]))
                kwargs = config
            model = getattr(module, cls)(config, torch.bfloat16, "meta", _operations())
        else:
            model = getattr(module, cls)(
                **kwargs, dtype=torch.bfloat16, device="meta", operations=_operations()
            )
    tensors = {k: list(v.shape) for k, v in model.state_dict().items()}
    return {
        "name": name,
        "built_from": f"ComfyUI {COMMIT[:8]} comfy/{rel} {cls} on the meta device "
        "(tools/family_keys.py)",
        "config_source": source,
        "config": {k: v for k, v in kwargs.items() if isinstance(v, int | float | str | list)},
        "tensors": tensors,
    }


def modules(tensors: dict[str, Any]) -> list[str]:
    """Module names: a tensor name without its .weight/.bias (a bare parameter stays)."""
    out: dict[str, None] = {}
    for name in tensors:
        prefix, _, suffix = name.rpartition(".")
        out[prefix if suffix in ("weight", "bias") and prefix else name] = None
    return list(out)


def layout(
    tensors: dict[str, Any],
) -> tuple[dict[str, tuple[int, list[str], list[str]]], list[str]]:
    """(block group -> (block count, modules in every block, modules in only some), top-level
    modules)."""
    groups: dict[str, dict[int, list[str]]] = {}
    top: list[str] = []
    for m in modules(tensors):
        hit = BLOCK_GROUP.match(m)
        if hit is None:
            top.append(m)
            continue
        groups.setdefault(hit.group(1), {}).setdefault(int(hit.group(2)), []).append(hit.group(3))
    out = {}
    for g, blocks in groups.items():
        union = list(dict.fromkeys(m for inner in blocks.values() for m in inner))
        every = [m for m in union if all(m in inner for inner in blocks.values())]
        out[g] = (max(blocks) + 1, every, [m for m in union if m not in every])
    return out, top


def write_layouts(docs: dict[str, dict[str, Any]]) -> None:
    """src/quantcheck/families/layouts.py: each built model's modules, by block group (run
    `ruff format` on it afterwards)."""
    lines = [
        '"""GENERATED by tools/family_keys.py (do not edit): the modules of each model family\'s',
        "reference build, by numbered block group and at the top level.",
        "",
        "Each entry is what ComfyUI 783545f6's own model class holds when built with the",
        "family's published config on the meta device; tests/data/families/<name>.json keeps the",
        'full key and shape list and where each config came from."""',
        "",
        "from __future__ import annotations",
        "",
        "#: A block group: (prefix, blocks, modules in every block, modules in only some blocks).",
        "Group = tuple[str, int, tuple[str, ...], tuple[str, ...]]",
        "#: name -> (block groups, top-level modules)",
        "LAYOUTS: dict[str, tuple[tuple[Group, ...], tuple[str, ...]]] = {",
    ]
    for name in sorted(docs):
        groups, top = layout(docs[name]["tensors"])
        lines.append(f"    {name!r}: (")
        lines.append("        (")
        for g, (count, every, some) in groups.items():
            lines.append(f"            ({g!r}, {count}, (")
            lines.extend(f"                {m!r}," for m in every)
            lines.append("            ), (")
            lines.extend(f"                {m!r}," for m in some)
            lines.append("            )),")
        lines.append("        ),")
        lines.append("        (")
        lines.extend(f"            {m!r}," for m in top)
        lines.append("        ),")
        lines.append("    ),")
    lines.append("}")
    LAYOUTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default=MIRROR)
    parser.add_argument("--layouts-only", action="store_true", help="rewrite layouts.py only")
    parser.add_argument("names", nargs="*", default=list(MODELS))
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.layouts_only:
        docs = {p.stem: json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))}
        write_layouts(docs)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        _extract(args.mirror, scratch)
        _install(scratch)
        for name in args.names:
            try:
                doc = build(name)
            except Exception as exc:  # report and go on: one family per run may need work
                print(f"{name}: FAILED {type(exc).__name__}: {exc}")
                continue
            text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
            (OUT / f"{name}.json").write_text(text, encoding="utf-8")
            print(f"{name}: {len(doc['tensors'])} tensors")
    write_layouts({p.stem: json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
