"""ComfyUI's LoRA key map for a diffusion model, from the base checkpoint's tensor names.

`model_lora_keys_unet` (comfy/lora.py @783545f6) reads the model's state dict: every stored
key after the key plumbing (`rules/comfyui/keys.py`: the model prefix stripped), under
`diffusion_model.`. Generic entries for every key, then the branch of the model's family
(`runtimes/comfyui_lora.BRANCHES`); branches through a diffusers table are not modelled and
said so (`KeyMap.unmodelled`). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable

from quantcheck._record import record
from quantcheck.rules.comfyui.keys import model_prefix
from quantcheck.runtimes.comfyui_lora import (
    BRANCHES,
    BRANCHES_NOT_MODELLED,
    FAMILY_KEYS,
    HUNYUAN_VIDEO_REWRITES,
)

DM = "diffusion_model."


@record
class KeyMap:
    """LoRA module name -> model state-dict key (`diffusion_model.X.weight`), the family the
    base was taken for, and whether its family branch is outside what is modelled."""

    entries: dict[str, str]
    family: str
    prefix: str
    #: model key -> the base's stored tensor name
    stored: dict[str, str]
    unmodelled: bool = False


def model_keys(names: Iterable[str]) -> tuple[str, dict[str, str]]:
    """(prefix stripped, model key -> stored name) as the key plumbing leaves a file."""
    names = list(names)
    prefix = model_prefix(names)
    kept = [n for n in names if n.startswith(prefix)]
    if not kept:
        prefix, kept = "", names
    return prefix, {DM + n[len(prefix) :]: n for n in kept}


def family_of(model: Iterable[str]) -> str:
    """The family ComfyUI's detection would take the model for ("" when none of the modelled
    signatures is present)."""
    keys = set(model)
    for family, needed in FAMILY_KEYS:
        if all(DM + k in keys for k in needed):
            return family
    return ""


def build_key_map(names: Iterable[str], family: str | None = None) -> KeyMap:
    """The key map for a base checkpoint's stored tensor names (`family`: override the
    detection)."""
    prefix, stored = model_keys(names)
    fam = family_of(stored) if family is None else family
    out: dict[str, str] = {}
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
    return KeyMap(out, fam, prefix, stored, fam in BRANCHES_NOT_MODELLED)
