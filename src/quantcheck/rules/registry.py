"""One registry of stable diagnostic codes. Codes are never reused; retired codes stay listed."""

from __future__ import annotations

from functools import cache

from quantcheck.rules.rule import Rule, effects

FAMILIES = {
    "QC1": "container (safetensors structure)",
    "QC2": "markers (comfy_quant and _quantization_metadata)",
    "QC3": "layers (tensors, dtypes and shapes per format)",
    "QC4": "numeric (deep checks of stored values)",
    "QC5": "shards and indexes",
    "QC6": "runtime compatibility (format support and mixes)",
    "QC7": "other runtimes (Forge Neo, SD.Next, InvokeAI, stable-diffusion.cpp, "
    "DiffSynth-Studio, musubi-tuner)",
    "QC8": "expectations: GPU class (QC80x), LoRA on a quantized base (QC83x), model "
    "families (QC86x)",
}

#: The generic rule folders (`rules/<name>/catalog.py`); each runtime's own rules come from its
#: record's folder (`Runtime.folder`: `rules/<runtime>/catalog.py`).
CATALOGS: tuple[str, ...] = (
    "container",
    "markers",
    "layers",
    "numeric",
    "shards",
    "gpu",
    "family",
    "lora",
)


def all_rules() -> dict[str, Rule]:
    """Every rule by code, from the generic catalogs and each registered runtime's folder;
    duplicate codes or names are a bug."""
    from quantcheck.runtimes import registry

    return _rules_at(registry.generation)


@cache
def _rules_at(generation: int) -> dict[str, Rule]:
    """The rules while the runtime registry is at `generation` (a registration renews it)."""
    from importlib import import_module

    from quantcheck.runtimes import runtimes

    names = [f"quantcheck.rules.{name}.catalog" for name in CATALOGS]
    names += [f"{rt.folder}.catalog" for rt in runtimes() if rt.folder]
    table: dict[str, Rule] = {}
    seen: set[str] = set()
    for name in names:
        for rule in import_module(name).RULES:
            if rule.code in table or rule.name in seen:
                raise RuntimeError(f"duplicate rule {rule.code} {rule.name}")
            table[rule.code] = rule
            seen.add(rule.name)
    return dict(sorted(table.items()))


def get_rule(code: str) -> Rule:
    """The rule for a code; KeyError for an unknown code (`codes.rule_of` reads only its
    catalog)."""
    return all_rules()[code]


def find_rule(text: str) -> Rule | None:
    """Look a rule up by code (any case), kebab-case name, or a name it had before (a ComfyUI
    step renamed after its release: `format-needs-comfyui-cd9452e`)."""
    from quantcheck.runtimes.comfyui_releases import RULE_ALIASES

    rules = all_rules()
    key = text.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    if key.lower() in RULE_ALIASES:
        return rules[RULE_ALIASES[key.lower()]]
    for rule in rules.values():
        if rule.name == key.lower():
            return rule
    return None


__all__ = ["FAMILIES", "Rule", "all_rules", "effects", "find_rule", "get_rule"]
