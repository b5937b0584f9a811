"""The runtimes quantcheck models: sglang (releases 0.5.18-0.5.23, `sglang_releases`) and
ComfyUI (the default targets), then the other consumers of these files, one module each."""

from __future__ import annotations

from quantcheck.runtimes import builtin_reasons
from quantcheck.runtimes.comfyui_cpu import comfyui_cpu_runtime
from quantcheck.runtimes.comfyui_releases import comfyui_runtime
from quantcheck.runtimes.diffsynth import diffsynth_runtime
from quantcheck.runtimes.forge_neo import forge_neo_runtime
from quantcheck.runtimes.invokeai import invokeai_runtime
from quantcheck.runtimes.musubi import musubi_runtime
from quantcheck.runtimes.registry import Runtime, register_runtime
from quantcheck.runtimes.sdcpp import sdcpp_runtime
from quantcheck.runtimes.sdnext import sdnext_runtime
from quantcheck.runtimes.sglang_releases import HEADER_DECLARED, SGLANG_RELEASES

SGLANG = register_runtime(
    Runtime(
        "sglang",
        "sglang",
        SGLANG_RELEASES,
        checks="quantcheck.rules.sglang.checks:SglangChecks",
        quantize_refusal="quantcheck.rules.sglang.checks:sglang_quantize_refusal",
        paths="quantcheck.rules.sglang.header_rules:path_json",
        header_formats=HEADER_DECLARED,
        gpu="quantcheck.rules.sglang.gpu:SGLANG_GPU",
        default_target=True,
        catalog=True,
        reasons=dict(builtin_reasons.SGLANG),
        doc="sglang's ComfyUI-checkpoint loader: the header path "
        "(get_quant_config_from_safetensors_metadata, tried first), then the marker "
        "inspector, format resolver and the config classes' constructors (format support, "
        "format mixes, quant_format).",
    )
)
COMFYUI = register_runtime(comfyui_runtime())  # releases: comfyui_releases.py
#: ComfyUI started with `--cpu` (the safe_open loader), a fork of `comfyui`.
COMFYUI_CPU = register_runtime(comfyui_cpu_runtime())

#: The built-in runtimes in the order the catalogs write their effects.
BUILTIN: tuple[str, ...] = (SGLANG.name, COMFYUI.name)
#: The other consumers (issue 14), judged with `--target all` or by name.
OTHERS: tuple[str, ...] = tuple(
    register_runtime(make()).name
    for make in (
        forge_neo_runtime,
        sdnext_runtime,
        invokeai_runtime,
        sdcpp_runtime,
        diffsynth_runtime,
        musubi_runtime,
    )
)
