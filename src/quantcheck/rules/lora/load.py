"""ComfyUI's `load_lora` on tensor names: which LoRA keys load, onto which model key, as what.

comfy/lora.py @783545f6 `load_lora(lora, key_map)`: for every module name x of the key map, the
keys `x.alpha`, `x.dora_scale`, each adapter's names (`weight_adapter/*.py` `load`, all tried:
a later one replaces the patch of an earlier), `x.w_norm`/`x.b_norm`, `x.diff`, `x.diff_b`,
`x.set_weight` are taken; every other key of the file is logged "lora key not loaded". A
key-map value that is a slice `(key, (0, offset, size))` patches those rows of the weight (the
patch dict is keyed by the value, so q, k and v slices of one fused weight are three patches),
one with a function `(key, None, fn)` patches the weight with the function applied to the
delta. Before that, `comfy/lora_convert.py convert_lora` renames Wan Fun LoRAs (`lora_unet__`
-> `lora_unet_`), BFL control LoRAs (every key under `diffusion_model.`, `.lora_B.bias` ->
`.diff_b`, `_norm.scale` -> `_norm.set_weight`, and a `diffusion_model.img_in.reshape_weight`
it adds) and USO LoRAs (their processor names to Flux's). Standard library only.
"""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.rules.lora.diffusers import Target
from quantcheck.runtimes.comfyui_lora import (
    GLORA,
    LOHA,
    LOHA_TUCKER,
    LOKR,
    LORA_NAMINGS,
    SUFFIXES_BY_LAST,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Shape of a tensor by name (what the headers give).
Shapes = dict[str, tuple[int, ...]]


@record
class Patch:
    """One patch load_lora makes: the model key it targets, the module name x it was found
    under, its kind and its parts (role -> LoRA key); `offset` (dim, start, size) when it
    patches a slice of the weight, `function` ("swap") when the delta is transformed."""

    target: str
    module: str
    kind: str
    parts: dict[str, str] = factory(dict)
    offset: tuple[int, int, int] | None = None
    function: str = ""


@record
class Loaded:
    """What load_lora takes from a LoRA: patches by target, the keys it loads, the keys it
    would log as not loaded (file order), and the file's keys after convert_lora (renamed
    key -> key in the file)."""

    patches: dict[Target, Patch]
    loaded: set[str]
    unmatched: list[str]
    renamed: dict[str, str]
    conversion: str = ""


#: USO's processor names and ComfyUI's (convert_uso_lora), in its order
USO_RENAMES = (
    (".down.weight", ".lora_down.weight"),
    (".up.weight", ".lora_up.weight"),
    (".qkv_lora2.", ".txt_attn.qkv."),
    (".qkv_lora1.", ".img_attn.qkv."),
    (".proj_lora1.", ".img_attn.proj."),
    (".proj_lora2.", ".txt_attn.proj."),
    (".qkv_lora.", ".linear1_qkv."),
    (".proj_lora.", ".linear2."),
    (".processor.", "."),
)
#: the key convert_lora_bfl_control adds (no tensor of the file)
BFL_RESHAPE = "diffusion_model.img_in.reshape_weight"


def convert(names: list[str]) -> tuple[dict[str, str], str]:
    """convert_lora's renaming (new name -> name in the file; BFL control's added reshape key
    maps to "") and which conversion ran."""
    keys = set(names)
    if "img_in.lora_A.weight" in keys and "single_blocks.0.norm.key_norm.scale" in keys:
        out = {}
        for n in names:
            to = n.replace(".lora_B.bias", ".diff_b").replace("_norm.scale", "_norm.set_weight")
            out["diffusion_model." + to] = n
        out[BFL_RESHAPE] = ""
        return out, "bfl-control"
    if "lora_unet__blocks_0_cross_attn_k.lora_down.weight" in keys:
        out = {}
        for n in names:
            out["lora_unet_" + n[len("lora_unet__") :] if n.startswith("lora_unet__") else n] = n
        return out, "wan-fun"
    if (
        "single_blocks.37.processor.qkv_lora.up.weight" in keys
        and "double_blocks.18.processor.qkv_lora2.up.weight" in keys
    ):
        out = {}
        for n in names:
            to = n
            for a, b in USO_RENAMES:
                to = to.replace(a, b)
            out["diffusion_model." + to] = n
        return out, "uso"
    return {n: n for n in names}, ""


def _modules(names: list[str], key_map: Mapping[str, object]) -> list[str]:
    """Module names of the key map some LoRA key could load under, in key-map order."""
    found: set[str] = set()
    for n in names:
        for suffix in SUFFIXES_BY_LAST.get(n.rsplit(".", 1)[-1], ()):
            if n.endswith(suffix):
                x = n[: -len(suffix)]
                if x in key_map:
                    found.add(x)
    order = {x: i for i, x in enumerate(key_map)} if len(found) > 1 else {}
    return sorted(found, key=lambda x: order.get(x, 0))


def split_target(value: Target) -> tuple[str, tuple[int, int, int] | None, str]:
    """(model key, slice or None, function or "") of a key-map value."""
    if isinstance(value, str):
        return value, None, ""
    key, offset, *fn = value
    return key, offset, (fn[0] if fn else "")


def load_lora(shapes: Mapping[str, tuple[int, ...]], key_map: Mapping[str, Target]) -> Loaded:
    """load_lora over a LoRA's tensor names and shapes (file order kept)."""
    renamed, conversion = convert(list(shapes))
    keys = set(renamed)
    loaded: set[str] = set()
    patches: dict[Target, Patch] = {}
    for x in _modules(list(renamed), key_map):
        entry = key_map[x]
        target, offset, function = split_target(entry)
        extra: dict[str, str] = {}
        for part in ("alpha", "dora_scale"):
            if f"{x}.{part}" in keys:
                loaded.add(f"{x}.{part}")
                extra[part] = f"{x}.{part}"
        for patch in _adapters(x, keys, renamed, shapes, target):
            loaded.update(patch.parts.values())
            patch.parts.update(extra)
            if patch.target == target:
                patch.offset, patch.function = offset, function
                patches[entry] = patch
            else:
                patches[patch.target] = patch
    unmatched = [renamed[n] for n in renamed if n not in loaded and renamed[n]]
    return Loaded(patches, loaded, unmatched, renamed, conversion)


def _adapters(
    x: str,
    keys: set[str],
    renamed: Mapping[str, str],
    shapes: Mapping[str, tuple[int, ...]],
    target: str,
) -> list[Patch]:
    """The patches each adapter's `load` (in ComfyUI's order) and the diff forms make for x."""
    out: list[Patch] = []
    for up, down, mid in LORA_NAMINGS:
        if x + up in keys:
            parts = {"up": x + up, "down": x + down}
            if mid and x + mid in keys:
                parts["mid"] = x + mid
            if f"{x}.reshape_weight" in keys:
                parts["reshape"] = f"{x}.reshape_weight"
            out.append(Patch(target, x, "lora", parts))
            break
    if x + LOHA[0] in keys:
        parts = {s.lstrip(".").replace("hada_", ""): x + s for s in LOHA}
        if x + LOHA_TUCKER[0] in keys:
            parts.update({s.lstrip(".").replace("hada_", ""): x + s for s in LOHA_TUCKER})
        out.append(Patch(target, x, "loha", parts))
    lokr = {s.lstrip(".").replace("lokr_", ""): x + s for s in LOKR if x + s in keys}
    if lokr:
        kind = "lokr" if set(lokr) & {"w1", "w2", "w1_a", "w2_a"} else "lokr-parts"
        out.append(Patch(target, x, kind, lokr))
    if x + GLORA[0] in keys:
        out.append(Patch(target, x, "glora", {s[1:3]: x + s for s in GLORA}))
    blocks = f"{x}.oft_blocks"
    if blocks in keys and len(shapes.get(renamed[blocks], ())) in (3, 4):
        parts = {"blocks": blocks}
        if f"{x}.rescale" in keys:
            parts["rescale"] = f"{x}.rescale"
        dims = len(shapes.get(renamed[blocks], ()))
        out.append(Patch(target, x, "oft" if dims == 3 else "boft", parts))
    bias = target[: -len(".weight")] + ".bias" if target.endswith(".weight") else target + ".bias"
    for name, kind, on in (
        ("w_norm", "diff", target),
        ("diff", "diff", target),
        ("diff_b", "diff", bias),
        ("set_weight", "set", target),
    ):
        if f"{x}.{name}" in keys:
            out.append(Patch(on, x, kind, {"diff": f"{x}.{name}"}))
            if name == "w_norm" and f"{x}.b_norm" in keys:
                out.append(Patch(bias, x, "diff", {"diff": f"{x}.b_norm"}))
    return out


def patch_shape(patch: Patch, nk: tuple[int, int] | None) -> tuple[int, int] | None:
    """The [N, K] a patch applies to: the layer's, or its slice's (rows of a fused weight)."""
    if nk is None or patch.offset is None:
        return nk
    dim, _, size = patch.offset
    return (size, nk[1]) if dim == 0 else (nk[0], size)
