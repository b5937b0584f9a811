"""What a LoRA file's names say: its adapter kinds, trainer naming, the model it was made for,
and why a key ComfyUI does not load misses. Standard library only."""

from __future__ import annotations

import difflib

from quantcheck.rules.lora.keymap import DM, KeyMap
from quantcheck.runtimes.comfyui_lora import (
    BRANCHES_NOT_MODELLED,
    DIFFUSERS_RENAMES,
    LORA_FAMILY_HINTS,
    LORA_NAMINGS,
    PREFIXES,
    SUFFIXES_BY_LAST,
    TEXT_ENCODER_PREFIXES,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

#: naming of each LoRAAdapter up-suffix
NAMING = dict(
    zip(
        (n[0] for n in LORA_NAMINGS),
        ("kohya", "diffusers", "peft", "diffusers", "mochi", "transformers", "peft-default"),
        strict=True,
    )
)
KIND_SUFFIX = (
    (".hada_w1_a", "loha"),
    (".lokr_w1", "lokr"),
    (".lokr_w2", "lokr"),
    (".lokr_w1_a", "lokr"),
    (".dora_scale", "dora"),
    (".oft_blocks", "oft"),
    (".a1.weight", "glora"),
    (".diff", "diff"),
    (".set_weight", "set"),
)
META_KEYS = ("ss_base_model_version", "modelspec.architecture", "ss_network_module")
#: name parts of diffusers UNet module names (unet_to_diffusers' left side)
UNET_DIFFUSERS_PARTS = ("down_blocks", "up_blocks", "mid_block")


def split_key(name: str) -> tuple[str, str]:
    """(module, adapter suffix) of a LoRA key; suffix "" when none is one ComfyUI reads."""
    for s in SUFFIXES_BY_LAST.get(name.rsplit(".", 1)[-1], ()):
        if name.endswith(s):
            return name[: -len(s)], s
    return name, ""


def _prefix(module: str) -> tuple[str, str]:
    for conv, p in PREFIXES:
        if module.startswith(p):
            return conv, p
    return "bare", ""


def is_text_encoder(module: str) -> bool:
    return module.startswith(TEXT_ENCODER_PREFIXES)


def describe(names: Iterable[str], metadata: Mapping[str, str]) -> dict[str, object]:
    """The conventions of a LoRA: adapter kinds, namings and prefixes (with counts), text-encoder
    keys, and the model family its names or metadata point to."""
    kinds: dict[str, int] = {}
    namings: dict[str, int] = {}
    prefixes: dict[str, int] = {}
    families: dict[str, int] = {}
    te = 0
    for n in names:
        module, suffix = split_key(n)
        if suffix in NAMING:
            kinds["lora"] = kinds.get("lora", 0) + 1
            namings[NAMING[suffix]] = namings.get(NAMING[suffix], 0) + 1
        for s, kind in KIND_SUFFIX:
            if suffix == s:
                kinds[kind] = kinds.get(kind, 0) + 1
        if is_text_encoder(module):
            te += 1
            continue
        if suffix in NAMING or suffix in (".hada_w1_a", ".lokr_w1", ".lokr_w1_a", ".diff"):
            conv, _ = _prefix(module)
            prefixes[conv] = prefixes.get(conv, 0) + 1
            dotted = module.replace("_", ".")
            for hint, fam in LORA_FAMILY_HINTS:
                if hint in module or hint in dotted:
                    families[fam] = families.get(fam, 0) + 1
                    break
    meta = {k: metadata[k] for k in META_KEYS if k in metadata}
    return {
        "adapters": kinds,
        "namings": namings,
        "prefixes": prefixes,
        "text_encoder_keys": te,
        "made_for": max(families, key=families.__getitem__) if families else None,
        "metadata": meta,
    }


class Explainer:
    """Why a LoRA key does not load on this base, and the base name nearest to it."""

    def __init__(self, km: KeyMap, made_for: str | None) -> None:
        self.km = km
        self.made_for = made_for
        self.paths = [k[len(DM) : -len(".weight")] for k in km.stored if k.endswith(".weight")]
        self.path_set = set(self.paths)
        self.by_underscore = {p.replace(".", "_"): p for p in self.paths}

    def _bare(self, module: str) -> str:
        _, p = _prefix(module)
        return module[len(p) :]

    def _valid_form(self, path: str) -> str:
        return f"{DM}{path}"

    def explain(self, key: str) -> dict[str, str | None]:
        """{"reason", "detail", "nearest"} for an unmatched LoRA key."""
        module, suffix = split_key(key)
        if is_text_encoder(module):
            return _why(
                "text-encoder",
                "a text-encoder key: it patches the text encoder, not "
                "this diffusion model (LoraLoaderModelOnly logs it as not loaded)",
                None,
            )
        if not suffix:
            return _why(
                "not-an-adapter-tensor",
                "no adapter ComfyUI knows reads a key ending like this",
                None,
            )
        bare = self._bare(module)
        path = bare if bare in self.path_set else self.by_underscore.get(bare)
        if path is not None:
            branch = self.km.family or "this model"
            if self.km.unmodelled:
                return _why(
                    "not-modelled",
                    f"ComfyUI's {branch} branch maps names through a table quantcheck does "
                    "not model; whether this key loads is not predicted",
                    self._valid_form(path),
                )
            return _why(
                "prefix",
                f"the layer exists, but ComfyUI's key map for {branch} has no entry with this "
                f"prefix; it maps {DM}{path} and lora_unet_{path.replace('.', '_')}",
                self._valid_form(path),
            )
        if self.km.unmodelled and any(p in bare for p in UNET_DIFFUSERS_PARTS):
            return _why(
                "not-modelled",
                f"diffusers UNet names; ComfyUI's {self.km.family} branch maps them through "
                "unet_to_diffusers, which quantcheck does not model: not predicted",
                None,
            )
        renamed = self._renamed(bare)
        if renamed is not None:
            return _why(
                "naming-convention",
                f"diffusers-style names for {self.km.family}; model_lora_keys_unet has no "
                f"{self.km.family} branch that maps them (this is {renamed} there)",
                self._valid_form(renamed),
            )
        nearest = self._nearest(bare)
        if self.made_for and self.km.family and not self.made_for.startswith(self.km.family):
            return _why(
                "another-family",
                f"the LoRA's names are {self.made_for}'s; the base is {self.km.family}",
                nearest,
            )
        return _why("missing-layer", "the base has no layer of this name", nearest)

    def _renamed(self, bare: str) -> str | None:
        dotted = bare if "." in bare else None
        if dotted is None:
            return None
        for a, b in DIFFUSERS_RENAMES.get(self.km.family, ()):
            if a in dotted:
                cand = dotted.replace(a, b)
                if cand in self.path_set:
                    return cand
        return None

    def _nearest(self, bare: str) -> str | None:
        dotted = self.by_underscore.get(bare, bare)
        head = dotted.split(".")[:2]
        pool = [p for p in self.paths if p.split(".")[:2] == head] or self.paths[:4000]
        hit = difflib.get_close_matches(dotted, pool, n=1, cutoff=0.5)
        return self._valid_form(hit[0]) if hit else None


def _why(reason: str, detail: str, nearest: str | None) -> dict[str, str | None]:
    return {"reason": reason, "detail": detail, "nearest": nearest}


def unmodelled_family(family: str) -> bool:
    return family in BRANCHES_NOT_MODELLED
