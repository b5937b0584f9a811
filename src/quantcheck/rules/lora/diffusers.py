"""The key-map entries of ComfyUI's diffusers-name branches (Flux, SD3, AuraFlow, PixArt,
Krea2, Lumina2/Z-Image), from the base's names and shapes (`runtimes/comfyui_lora_diffusers`).

An entry's value is what `model_lora_keys_unet` stores: a model key (`diffusion_model.X.weight`),
or `(key, (0, offset, size))` for a slice of a fused weight, or `(key, None, "swap")` for a
patch whose delta has its halves swapped. Standard library only.
"""

from __future__ import annotations

import re

from quantcheck.runtimes import comfyui_lora_diffusers as T

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: a key-map value: a model key, a slice of one, or one with a function
Target = str | tuple[str, tuple[int, int, int]] | tuple[str, None, str]

DM = "diffusion_model."
W = ".weight"


def _count(keys: Mapping[str, object], prefix: str) -> int:
    """ComfyUI's count_blocks: the first index i with no key starting `prefix` + `i.`."""
    found = set()
    pat = re.compile(re.escape(DM + prefix) + r"(\d+)\.")
    for k in keys:
        m = pat.match(k)
        if m:
            found.add(int(m.group(1)))
    n = 0
    while n in found:
        n += 1
    return n


def config(family: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """The family's config values the tables need (model keys -> shapes given)."""
    out: dict[str, int] = {}
    for name, (how, what) in T.CONFIG.get(family, {}).items():
        if how == "count":
            out[name] = _count(shapes, str(what))
        elif how == "const":
            out[name] = int(str(what))
        else:
            shape = shapes.get(DM + str(what))
            rows = shape[0] if shape else 0
            out[name] = rows // 64 if how == "rows64" else rows
    return out


def _names(family: str, k: str) -> list[str]:
    u = k.replace(".", "_")
    return [t.format(k=k, u=u) for t in T.NAMES[family]]


def diffusers_entries(family: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Target]:
    """diffusers name (without ".weight") -> target, in ComfyUI's table order; {} for a family
    without a diffusers branch."""
    c = config(family, shapes)
    table: list[tuple[str, Target]] = []

    def slices(src: str, dst: str, rows: tuple[T.Slice, ...], unit: int) -> None:
        for d, m, off, size in rows:
            table.append((f"{src}.{d}", (f"{DM}{dst}.{m}{W}", (0, off * unit, size * unit))))

    def renames(src: str, dst: str, rows: tuple[T.Rename, ...]) -> None:
        for d, m in rows:
            table.append((f"{src}.{d}", f"{DM}{dst}.{m}{W}"))

    def basic(rows: tuple[tuple[str, str, str], ...]) -> None:
        for d, m, fn in rows:
            table.append((d, (f"{DM}{m}{W}", None, fn) if fn else f"{DM}{m}{W}"))

    if family == "flux":
        h = c["hidden"]
        for i in range(c["depth"]):
            slices(f"transformer_blocks.{i}", f"double_blocks.{i}", T.FLUX_DOUBLE_SLICES, h)
            renames(f"transformer_blocks.{i}", f"double_blocks.{i}", T.FLUX_DOUBLE)
        for i in range(c["single"]):
            src, dst = f"single_transformer_blocks.{i}", f"single_blocks.{i}"
            slices(src, dst, T.FLUX_SINGLE_SLICES, h)
            renames(src, dst, T.FLUX_SINGLE)
        basic(T.FLUX_BASIC)
    elif family == "sd3":
        unit = c["depth"] * 64
        for i in range(c["blocks"]):
            slices(f"transformer_blocks.{i}", f"joint_blocks.{i}", T.SD3_SLICES, unit)
            renames(f"transformer_blocks.{i}", f"joint_blocks.{i}", T.SD3_BLOCK)
        basic(T.SD3_BASIC)
        d, m = T.SD3_LAST_SWAP
        last = c["depth"] - 1
        table.append(
            (f"transformer_blocks.{last}.{d}", (f"{DM}joint_blocks.{last}.{m}{W}", None, "swap"))
        )
    elif family == "auraflow":
        for i in range(c["double"]):
            renames(f"joint_transformer_blocks.{i}", f"double_layers.{i}", T.AURAFLOW_DOUBLE)
        for i in range(c["single"]):
            renames(f"single_transformer_blocks.{i}", f"single_layers.{i}", T.AURAFLOW_SINGLE)
        basic(T.AURAFLOW_BASIC)
    elif family == "pixart":
        for i in range(c["depth"]):
            slices(f"transformer_blocks.{i}", f"blocks.{i}", T.PIXART_SLICES, c["hidden"])
            renames(f"transformer_blocks.{i}", f"blocks.{i}", T.PIXART_BLOCK)
        basic(T.PIXART_BASIC)
    elif family == "krea2":
        for src, dst, many in T.KREA2_BLOCKS:
            for i in range(c[many] if isinstance(many, str) else many):
                renames(f"{src}.{i}", f"{dst}.{i}", T.KREA2_BLOCK)
        basic(T.KREA2_BASIC)
    elif family == "lumina2":
        for prefix, many in T.LUMINA2_BLOCKS:
            for i in range(c[many]):
                slices(f"{prefix}.{i}", f"{prefix}.{i}", T.LUMINA2_SLICES, c["hidden"])
                renames(f"{prefix}.{i}", f"{prefix}.{i}", T.LUMINA2_BLOCK)
        basic(T.LUMINA2_BASIC)
    else:
        return {}
    return dict(table)


def branch_entries(family: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, Target]:
    """The LoRA names a diffusers branch adds to the key map (each diffusers name under every
    prefix of the family), with Flux's `linear1_qkv` entries."""
    out: dict[str, Target] = {}
    for k, target in diffusers_entries(family, shapes).items():
        for name in _names(family, k):
            out[name] = target
    if family == "flux":
        h = config(family, shapes)["hidden"]
        src, dst, off, size = T.FLUX_LINEAR1_QKV
        for key in shapes:
            if key.endswith(W) and f".{src}." in key:
                out[key.replace(f".{src}{W}", f".{dst}")] = (key, (0, off * h, size * h))
    return out
