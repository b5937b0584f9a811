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
}


@cache
def all_rules() -> dict[str, Rule]:
    """Every rule by code, from all catalog modules; duplicate codes or names are a bug."""
    from quantcheck.rules import (
        catalog_container,
        catalog_diffsynth,
        catalog_forge_neo,
        catalog_invokeai,
        catalog_layers,
        catalog_markers,
        catalog_musubi,
        catalog_numeric,
        catalog_runtime,
        catalog_sdcpp,
        catalog_sdnext,
        catalog_shards,
    )

    table: dict[str, Rule] = {}
    names: set[str] = set()
    for module in (
        catalog_container,
        catalog_markers,
        catalog_layers,
        catalog_numeric,
        catalog_shards,
        catalog_runtime,
        catalog_forge_neo,
        catalog_sdnext,
        catalog_invokeai,
        catalog_sdcpp,
        catalog_diffsynth,
        catalog_musubi,
    ):
        for rule in module.RULES:
            if rule.code in table or rule.name in names:
                raise RuntimeError(f"duplicate rule {rule.code} {rule.name}")
            table[rule.code] = rule
            names.add(rule.name)
    return dict(sorted(table.items()))


def get_rule(code: str) -> Rule:
    """The rule for a code; KeyError for an unknown code."""
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
