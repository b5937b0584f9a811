"""InvokeAI's own rules (QC720-QC724): one failing case and its passing twin each.

Checked with `--target invokeai` (InvokeAI is not a default target); the cases name the
effects on sglang, ComfyUI and InvokeAI. Behaviour per rule: rules/invokeai/catalog.py; the
outcomes are confirmed by InvokeAI's own code in tests/rules/invokeai/diff.
"""

from __future__ import annotations

from .._build import P, bf16, file, fp8, int8, mxfp8, nvfp4, t, w4a8
from .._case import RuleCase

ON = {"target": "invokeai"}
PLAIN_INT8 = {"format": "int8_tensorwise"}


def inv(effect: str) -> dict[str, str]:
    return {"sglang": "none", "comfyui": "none", "invokeai": effect}


CASES = [
    RuleCase(
        "QC720",
        "invokeai-fp8-dequantized",
        file(fp8),
        inv("degraded"),
        file(lambda: bf16(P)),
        check_kwargs=ON,
        message="no VRAM or speed saving",
    ),
    RuleCase(
        "QC721",
        "invokeai-int8-convrot",
        file(int8),
        inv("degraded"),
        file(lambda: int8(mark=PLAIN_INT8)),
        twin_allows=("QC720",),
        check_kwargs=ON,
        message="does NOT raise",
    ),
    RuleCase(
        "QC722",
        "invokeai-mxfp8-scales",
        file(mxfp8),
        inv("degraded"),
        file(fp8),
        twin_allows=("QC720",),
        check_kwargs=ON,
        message="E8M0",
    ),
    RuleCase(
        "QC723",
        "invokeai-nvfp4-packed",
        file(nvfp4),
        inv("fails"),
        file(fp8),
        twin_allows=("QC720",),
        check_kwargs=ON,
        message="size mismatch",
    ),
    RuleCase(
        "QC723",
        "invokeai-w4a8-packed",
        file(w4a8),
        inv("fails"),
        no_twin="the twin of the NVFP4 case covers it",
        check_kwargs=ON,
    ),
    RuleCase(
        "QC723",
        "invokeai-int8-1d-scale-does-not-broadcast",
        file(lambda: int8(n=32, k=64, mark=PLAIN_INT8, scale=("F32", (32,)))),
        inv("fails"),
        no_twin="a 1-D scale is also QC307",
        check_kwargs=ON,
        message="does not broadcast",
    ),
    RuleCase(
        "QC724",
        "invokeai-fp8-input-scale-kept",
        file(lambda: [*fp8(), t(f"{P}.input_scale", "F32", ())]),
        inv("degraded"),
        file(fp8),
        twin_allows=("QC720",),
        check_kwargs=ON,
        message="input_scale",
    ),
    RuleCase(
        "QC725",
        "invokeai-legacy-scale-weight",
        file(lambda: [t(f"{P}.weight", "F8_E4M3", (64, 64)), t(f"{P}.scale_weight", "F32", ())]),
        inv("degraded"),
        file(fp8),
        twin_allows=("QC720",),
        check_kwargs=ON,
        message="Z-Image and FLUX.2",
    ),
]
