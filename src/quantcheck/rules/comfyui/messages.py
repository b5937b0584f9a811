"""ComfyUI's own error messages (comfy/ops.py, comfy/quant_ops.py, and comfy-kitchen's as ComfyUI
calls it), so `quantcheck explain` recognises them."""

from __future__ import annotations

from quantcheck.explain.messages import MessagePattern, pattern
from quantcheck.rules import codes as R
from quantcheck.rules.registry import Rule
from quantcheck.runtimes.builtin import COMFYUI


def _backend_failure(v: dict[str, str]) -> str:
    """comfy-kitchen names each backend's failed constraint: a shape (QC307) or a dtype."""
    return R.QC307.code if ": shape " in v.get("failures", "") else R.QC305.code


def _added_to_comfyui_later() -> list[tuple[str, str, Rule, str]]:
    """(format, release, rule, fix target) for each format a ComfyUI step after the oldest
    added (an older ComfyUI's QUANT_ALGOS lookup raises KeyError): the per-layer code where the
    step has one (QC610, whose fix relabels for the release before the step), else the step's
    file-level code (QC606-QC609, QC650, QC651; no fix)."""
    from quantcheck.runtimes.comfyui_releases import LAYER_CODE, STEPS, before

    return [
        (
            fmt,
            name,
            getattr(R, LAYER_CODE.get(name) or code),
            f"comfyui@{before(name)}" if name in LAYER_CODE else "",
        )
        for name, code, fmts, _ in STEPS
        if code
        for fmt in fmts
    ]


PATTERNS: list[MessagePattern] = [
    *(
        pattern(
            f"Unsupported quantization format: {fmt}",  # comfy/ops.py _load_quantized_module
            rule,
            f"a ComfyUI from before {release}, which added {fmt}",
            runtime=COMFYUI.title,
            target=target,
        )
        for fmt, release, rule, target in _added_to_comfyui_later()
    ),
    pattern(
        "Unsupported quantization format",
        R.QC213,
        "a misspelt or fork-only format",
        runtime=COMFYUI.title,
    ),
    # comfy-kitchen's backend registry (registry.py, exceptions.py NoCapableBackendError):
    # no backend's constraint table accepts the call's tensors
    pattern(
        "No backend can handle {func!r}: {failures}",
        R.QC305,
        "a companion tensor of another dtype than the kernel's constraint table allows "
        "(e.g. a W4A8 weight_s_channel in BF16/F16: comfy-kitchen wants F32)",
        "a companion of another rank or shape (QC307)",
        runtime=f"comfy-kitchen (via {COMFYUI.title})",
        refine=_backend_failure,
        target="comfyui",
    ),
    pattern(
        "NoCapableBackendError",
        R.QC305,
        "a companion tensor of another dtype than the kernel's constraint table allows "
        "(e.g. a W4A8 weight_s_channel in BF16/F16: comfy-kitchen wants F32); paste the whole "
        "line to tell a dtype from a shape",
        runtime=f"comfy-kitchen (via {COMFYUI.title})",
        target="comfyui",
    ),
    pattern(
        "packed row width {cols} does not match K={K} at 4 or 6 bits",
        R.QC321,
        "weight, weight_s_rel or the marker's group_size from different quantizations",
        "a 4-bit W4A8 weight marked w6a8_int8",
        runtime=f"comfy-kitchen (via {COMFYUI.title})",
        target="comfyui",
    ),
    pattern(
        "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K={K}, "
        "group_size={group_size}",
        R.QC311,
        "a W6A8 layer quantized with group_size 4 or 8",
        "K not a multiple of 32",
        runtime=f"comfy-kitchen (via {COMFYUI.title})",
        target="comfyui",
    ),
    *(
        pattern(
            f"KeyError: '{fmt}'",
            rule,
            f"a ComfyUI from before {release}, which added {fmt}",
            "Forge Neo, whose format table (quant_ops.py QUANT_ALGOS) likely lacks it: "
            "`quantcheck check --target forge-neo` (QC701)",
            runtime=COMFYUI.title,
            target=target,
        )
        for fmt, release, rule, target in _added_to_comfyui_later()
    ),
]
