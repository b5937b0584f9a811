"""Rule table rows for Forge Neo's own codes (QC701-QC703): a failing file and a passing twin.

Each row names the effect on every runtime it means: sglang and ComfyUI too, so a Forge Neo
rule can never leak into their verdicts.
"""

from __future__ import annotations

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, w4a4, w6a8
from .._case import RuleCase


def forge(effect: str, sglang: str = "none", comfyui: str = "none") -> dict[str, str]:
    return {"sglang": sglang, "comfyui": comfyui, "forge-neo": effect, "sdnext": "none"}


ON_FORGE = {"target": "forge-neo"}
ALL_FORGE = {"target": "forge-neo@all"}

CASES = [
    RuleCase(
        "QC701",
        "convrot-w4a4-not-in-quant-algos",
        file(w4a4),
        forge("fails"),
        file(fp8),
        check_kwargs=ON_FORGE,
        message="likely raises KeyError('convrot_w4a4')",
    ),
    RuleCase(
        "QC701",
        "w6a8-not-in-quant-algos",
        file(w6a8),
        forge("fails"),
        file(fp8),
        check_kwargs=ON_FORGE,
        message="no w6a8_int8",
    ),
    RuleCase(
        "QC702",
        "int8-needs-939c56d",
        file(int8),
        forge("none"),
        file(fp8),
        check_kwargs=ALL_FORGE,
        message="from 939c56d on",
    ),
    RuleCase(
        "QC703",
        "header-drops-convrot",
        file(int8, header_meta({P: {"format": "int8_tensorwise"}})),
        forge("degraded"),
        file(int8, header_meta({P: INT8_CONVROT})),
        check_kwargs=ON_FORGE,
        message="'convrot', 'convrot_groupsize' (only in the tensor)",
    ),
]
