"""Effects a finding of a rule can have besides the rule's declared one (`Rule.effect_range`).

Most findings take their rule's effects; these rules' checks give some findings their own, by
the tensor or format involved (e.g. QC305: a W4A8 `weight_s_channel` in BF16 fails ComfyUI,
where comfy-kitchen's kernel wants F32; an INT8 F16 scale does not). `explain CODE` and
docs/rules.md show them, so the effects a reader is told are the ones `check` applies
(tests/rules/test_effect_range.py compares this table with the findings of every rule case).
"""

from __future__ import annotations

_CUI = ("comfyui", "comfyui-cpu", "forge-neo")


def _each(names: tuple[str, ...], *effects: str) -> dict[str, tuple[str, ...]]:
    return {n: effects for n in names}


#: code -> runtime -> effects (values of `Effect`) some findings have besides the declared one;
#: codes as strings (rule.py imports this module, and `rules.codes` imports the catalogs that
#: import rule.py), checked against the registry by tests/rules/test_effect_range.py
VARIANTS: dict[str, dict[str, tuple[str, ...]]] = {
    "QC219": _each(_CUI, "none"),
    "QC220": _each(_CUI, "none"),
    "QC222": _each(_CUI, "none", "fails"),
    "QC301": {"sglang": ("none",)},
    "QC305": {"sglang": ("none", "degraded"), **_each(_CUI, "fails")},
    "QC307": {"sglang": ("none",), **_each(_CUI, "none")},
    "QC311": {"sglang": ("none",), **_each(_CUI, "none")},
    "QC314": {"sglang": ("none",), **_each(_CUI, "none")},
    "QC320": _each(_CUI, "fails"),
    "QC713": {"sdnext": ("fails",)},
    # the runtime whose own LoRA merge loses the LoRA (rules/lora/checks.py)
    "QC838": {"sdnext": ("degraded",), "invokeai": ("degraded",)},
}
