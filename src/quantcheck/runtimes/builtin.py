"""The runtimes quantcheck models, one registration line each: sglang (`sglang_releases`) and
ComfyUI (`comfyui_releases`), the default targets, then the other consumers of these files.
Each record is data in its own module here; its behaviour is its folder `rules/<runtime>/`."""

from __future__ import annotations

from quantcheck.runtimes.comfyui_cpu import comfyui_cpu_runtime
from quantcheck.runtimes.comfyui_releases import comfyui_runtime
from quantcheck.runtimes.diffsynth import diffsynth_runtime
from quantcheck.runtimes.forge_neo import forge_neo_runtime
from quantcheck.runtimes.invokeai import invokeai_runtime
from quantcheck.runtimes.musubi import musubi_runtime
from quantcheck.runtimes.registry import register_runtime
from quantcheck.runtimes.sdcpp import sdcpp_runtime
from quantcheck.runtimes.sdnext import sdnext_runtime
from quantcheck.runtimes.sglang_releases import sglang_runtime

SGLANG = register_runtime(sglang_runtime())
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
