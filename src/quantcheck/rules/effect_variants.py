"""Effects a finding of a rule can have besides the rule's declared one (`Rule.effect_range`).

Most findings take their rule's effects; these rules' checks give some findings their own, by
the tensor or format involved (e.g. QC305: a W4A8 `weight_s_channel` in BF16 fails ComfyUI,
where comfy-kitchen's kernel wants F32; an INT8 F16 scale does not). `explain CODE` and
docs/rules.md show them, so the effects a reader is told are the ones `check` applies
(tests/rules/test_effect_range.py compares this table with the findings of every rule case).
"""

from __future__ import annotations

from quantcheck.rules import codes as R

_CUI = ("comfyui", "comfyui-cpu", "forge-neo")


def _each(names: tuple[str, ...], *effects: str) -> dict[str, tuple[str, ...]]:
    return {n: effects for n in names}


#: code -> runtime -> effects (values of `Effect`) some findings have besides the declared one
VARIANTS: dict[str, dict[str, tuple[str, ...]]] = {
    R.QC210.code: {"sglang": ("none",)},
    R.QC219.code: _each(_CUI, "none"),
    R.QC220.code: _each(_CUI, "none"),
    R.QC222.code: _each(_CUI, "none", "fails"),
    R.QC223.code: {"sglang": ("none",)},
    R.QC301.code: {"sglang": ("none",)},
    R.QC305.code: {"sglang": ("none",), **_each(_CUI, "fails")},
    R.QC307.code: {"sglang": ("none",), **_each(_CUI, "none")},
    R.QC311.code: {"sglang": ("none",), **_each(_CUI, "none")},
    R.QC314.code: {"sglang": ("none",), **_each(_CUI, "none")},
    R.QC320.code: _each(_CUI, "fails"),
    R.QC713.code: {"sdnext": ("fails",)},
}
