"""ComfyUI's LoRA key map for a diffusion model, from the base checkpoint's tensor names.

`model_lora_keys_unet` (comfy/lora.py @783545f6) reads the model's state dict: every stored
key after the key plumbing (ComfyUI's `keys` hook, `rules/comfyui/keys.py`: the model prefix
stripped), under `diffusion_model.`. Generic entries for every key, then the branch of the
model's family (`runtimes/comfyui_lora.BRANCHES`, and the diffusers tables of Flux, SD3,
AuraFlow, PixArt, Krea2 and Lumina2 through `diffusers.py`, whose values may be a slice of a
fused weight or carry a function); the UNet models' `unet_to_diffusers` table is not modelled
and said so (`KeyMap.unmodelled`). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable

from quantcheck._record import record
from quantcheck.rules.lora.diffusers import Target, branch_entries
from quantcheck.runtimes import get_runtime, load
from quantcheck.runtimes.comfyui_lora import (
    BRANCHES,
    BRANCHES_NOT_MODELLED,
    DIFFUSERS_BRANCHES,
    FAMILY_KEYS,
    HUNYUAN_VIDEO_REWRITES,
)
from quantcheck.runtimes.lora_path import COMFY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from quantcheck.runtimes import KeyPlumbing

DM = "diffusion_model."


@record
class KeyMap:
    """LoRA module name -> model state-dict key (`diffusion_model.X.weight`, or a slice of
    one / one with a function: `diffusers.Target`), the family the base was taken for, and
    whether its family branch is outside what is modelled."""

    entries: dict[str, Target]
    family: str
    prefix: str
    #: model key -> the base's stored tensor name
    stored: dict[str, str]
    unmodelled: bool = False


def model_keys(names: Iterable[str]) -> tuple[str, dict[str, str]]:
    """(prefix stripped, model key -> stored name) as the key plumbing leaves a file."""
    names = list(names)
    prefix = _model_prefix(names)
    kept = [n for n in names if n.startswith(prefix)]
    if not kept:
        prefix, kept = "", names
    return prefix, {DM + n[len(prefix) :]: n for n in kept}


def _model_prefix(names: list[str]) -> str:
    """The model prefix ComfyUI strips (its record's `keys` hook: the LoRA path modelled
    here is ComfyUI's, `runtimes/lora_path.COMFY`)."""
    plumbing: KeyPlumbing = load(get_runtime(COMFY[0]).keys)
    return plumbing.model_prefix(names)


def family_of(model: Iterable[str]) -> str:
    """The family ComfyUI's detection would take the model for ("" when none of the modelled
    signatures is present)."""
    keys = set(model)
    for family, needed in FAMILY_KEYS:
        if all(DM + k in keys for k in needed):
            return family
    return ""


def build_key_map(
    names: Iterable[str],
    family: str | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> KeyMap:
    """The key map for a base checkpoint's stored tensor names (`family`: override the
    detection; `shapes`: stored name -> shape, which the diffusers tables read)."""
    prefix, stored = model_keys(names)
    fam = family_of(stored) if family is None else family
    out: dict[str, Target] = {}
    for k in stored:
        if k.endswith(".weight"):
            path = k[len(DM) : -len(".weight")]
            out["lora_unet_" + path.replace(".", "_")] = k
            out[k[: -len(".weight")]] = k
        else:
            out[k] = k
    templates = BRANCHES.get(fam)
    if templates:
        for k in stored:
            if k.endswith(".weight"):
                path = k[len(DM) : -len(".weight")]
                u = path.replace(".", "_")
                for t in templates:
                    out[t.format(k=path, u=u)] = k
    elif fam == "hunyuan_video":
        for k in stored:
            if k.endswith(".weight"):
                name = k
                for a, b in HUNYUAN_VIDEO_REWRITES:
                    name = name.replace(a, b)
                name = name[len(DM) : -len(".weight")]
                out["transformer." + name] = k
                out[DM + name] = k
    elif fam in DIFFUSERS_BRANCHES:
        given = shapes or {}
        out.update(branch_entries(fam, {k: given.get(n, ()) for k, n in stored.items()}))
    return KeyMap(out, fam, prefix, stored, fam in BRANCHES_NOT_MODELLED)
