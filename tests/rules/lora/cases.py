"""QC83x rule cases: a base and a LoRA, checked with `check_paths(base, lora=[...])`.

The LoRA is written beside the base in the case's tmp folder; the build puts its path into
the case's own `check_kwargs` (a dict the build fills before the check reads it), so the
failing file and its twin each check their own LoRA.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._case import RuleCase
from .families import family_base, family_lora, unet_base, unet_lora
from .pairs import WAN_LAYERS, flux_base, wan_base, write_lora

ALL = [f"blocks.0.{name}" for name in WAN_LAYERS]


def pair(kw: dict[str, Any], fmt: str, lora: dict[str, Any], **base: Any):
    """A build writing a Wan-like base in `fmt` and a LoRA (write_lora arguments)."""

    def build(tmp: Path) -> list[Path]:
        b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
        if base.get("flux"):
            flux_base(b, fmt)
        else:
            wan_base(b, fmt, **base)
        write_lora(lo, **lora)
        kw["lora"] = [str(lo)]
        return [b]

    return build


def unet_pair(kw: dict[str, Any], *, diffusers: bool):
    """A UNet stand-in (FP8) and a one-module LoRA in diffusers or ComfyUI UNet names."""

    def build(tmp: Path) -> list[Path]:
        b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
        unet_base(b, "float8_e4m3fn")
        unet_lora(lo, diffusers)
        kw["lora"] = [str(lo)]
        return [b]

    return build


def flux_pair(kw: dict[str, Any], modules: tuple[str, ...]):
    """The Flux stand-in (FP8) and a diffusers LoRA of `modules` only."""

    def build(tmp: Path) -> list[Path]:
        b, lo = tmp / "base.safetensors", tmp / "lora.safetensors"
        family_base(b, "flux", "float8_e4m3fn")
        family_lora(lo, "flux", "transformer.", only=modules)
        kw["lora"] = [str(lo)]
        return [b]

    return build


def case(code: str, name: str, expect: dict[str, str], fail, twin=None, **extra: Any) -> RuleCase:
    # sglang (a default target) keeps any LoRA on a quantized twin as a side branch: QC839
    if code != "QC839":
        extra["twin_allows"] = (*extra.get("twin_allows", ()), "QC839")
    return RuleCase(code, name, fail, expect, twin=twin, check_kwargs=extra.pop("kw"), **extra)


def _cases() -> list[RuleCase]:
    out = []
    kw: dict[str, Any] = {}
    out.append(
        case(
            "QC830",
            "lora-key-not-loaded",
            {"comfyui": "degraded"},
            pair(kw, "float8_e4m3fn", {"paths": [*ALL, "blocks.7.self_attn.q"]}),
            pair(kw, "float8_e4m3fn", {"paths": ALL}),
            kw=kw,
            message="missing-layer",
            twin_allows=("QC835",),
        )
    )
    kw = {}
    out.append(
        case(
            "QC831",
            "lora-text-encoder-keys",
            {"comfyui": "none"},
            pair(kw, "float8_e4m3fn", {"paths": ALL, "text_encoder": 2}),
            pair(kw, "float8_e4m3fn", {"paths": ALL}),
            kw=kw,
            twin_allows=("QC835",),
        )
    )
    kw = {}
    out.append(
        case(
            "QC832",
            "lora-shape-mismatch",
            {"comfyui": "degraded"},
            pair(kw, "nvfp4", {"paths": ALL, "wrong_shape": "blocks.0.self_attn.k"}),
            pair(kw, "nvfp4", {"paths": ALL}),
            kw=kw,
            message="logical shape is [128, 128]",
            twin_allows=("QC835",),
        )
    )
    kw = {}
    out.append(
        case(
            "QC833",
            "lora-patch-raises",
            {"comfyui": "fails"},
            pair(kw, "float8_e4m3fn", {"paths": ALL}, awq_at="blocks.0.self_attn.o"),
            pair(kw, "float8_e4m3fn", {"paths": ALL[:3]}, awq_at="blocks.0.self_attn.o"),
            kw=kw,
            message="NotImplementedError",
            twin_allows=("QC835", "QC601", "QC602"),
        )
    )
    kw = {"lora_numbers": True}
    out.append(
        case(
            "QC834",
            "lora-drowned-by-requant",
            {"comfyui": "degraded"},
            pair(kw, "nvfp4", {"paths": ALL, "size": 0.01}),
            pair(kw, "float8_e4m3fn", {"paths": ALL, "size": 0.05}),
            kw=kw,
            message="(measured)",
            twin_allows=("QC835",),
        )
    )
    kw = {}
    out.append(
        case(
            "QC835",
            "lora-runs-dequantized",
            {"comfyui": "none"},
            pair(kw, "nvfp4", {"paths": ALL}),
            pair(kw, "bf16", {"paths": ALL}),
            kw=kw,
        )
    )
    kw = {}
    out.append(
        case(
            "QC836",
            "lora-keys-not-predicted",
            {"comfyui": "none"},
            unet_pair(kw, diffusers=True),
            unet_pair(kw, diffusers=False),
            kw=kw,
            twin_allows=("QC835",),
        )
    )
    kw = {}
    out.append(
        case(
            "QC837",
            "lora-nothing-loaded",
            {"comfyui": "fails"},
            pair(kw, "float8_e4m3fn", {"paths": ["double_blocks.0.img_attn.qkv"]}),
            pair(kw, "float8_e4m3fn", {"paths": ALL}),
            kw=kw,
            twin_allows=("QC835",),
        )
    )
    kw = {"lora_numbers": True, "target": "sdnext"}
    out.append(
        case(
            "QC838",
            "lora-lost-on-sdnext",
            {"sdnext": "degraded"},
            pair(kw, "nvfp4", {"paths": ALL, "size": 0.01}),
            pair(kw, "int8_tensorwise", {"paths": ALL, "size": 0.05}),
            kw=kw,
            message="SDNQ round-to-nearest",
        )
    )
    kw = {"lora_numbers": True, "target": "invokeai"}
    out.append(
        case(
            "QC838",
            "lora-lost-on-invokeai",
            {"invokeai": "degraded"},
            pair(kw, "float8_e4m3fn", {"paths": ALL, "size": 0.0003}),
            pair(kw, "float8_e4m3fn", {"paths": ALL, "size": 0.05}),
            kw=kw,
            message="bf16 merge",
            twin_allows=("QC720", "QC835"),
        )
    )
    kw = {"target": "sglang"}
    out.append(
        case(
            "QC839",
            "lora-side-branch",
            {"sglang": "none"},
            pair(kw, "int8_tensorwise", {"paths": ALL}),
            pair(kw, "bf16", {"paths": ALL}),
            kw=kw,
            message="8 quantized layer(s)",
        )
    )
    kw = {}
    out.append(
        case(
            "QC840",
            "lora-slice-of-fused-layer",
            {"comfyui": "none"},
            flux_pair(kw, ("transformer_blocks.0.attn.add_k_proj",)),
            flux_pair(kw, tuple(f"transformer_blocks.0.attn.to_{x}" for x in "qkv")),
            kw=kw,
            message="patches rows 64-127",
            twin_allows=("QC835",),
        )
    )
    return out


CASES = _cases()
