"""The runtimes quantcheck models today: sglang (releases 0.5.18-0.5.23, `sglang_releases`)
and ComfyUI."""

from __future__ import annotations

from quantcheck.runtimes.comfyui_releases import comfyui_runtime
from quantcheck.runtimes.registry import Runtime, load, register_runtime
from quantcheck.runtimes.sglang_releases import SGLANG_RELEASES

SGLANG = register_runtime(
    Runtime(
        "sglang",
        "sglang",
        SGLANG_RELEASES,
        checks="quantcheck.rules.runtime_rules:SglangChecks",
        quantize_refusal="quantcheck.rules.runtime_rules:sglang_quantize_refusal",
        default_target=True,
        doc="sglang's ComfyUI-checkpoint loader: marker inspector, format resolver and the "
        "config classes' constructors (format support, format mixes, quant_format).",
    )
)
COMFYUI = register_runtime(comfyui_runtime())  # releases: comfyui_releases.py

#: The built-in runtimes in the order the catalogs write their effects.
BUILTIN: tuple[str, ...] = (SGLANG.name, COMFYUI.name)
register_runtime(load("quantcheck.runtimes.forge_neo:forge_neo_runtime")())
register_runtime(load("quantcheck.runtimes.sdnext:sdnext_runtime")())
