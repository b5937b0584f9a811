"""Import ComfyUI's LoRA code (comfy/lora.py, lora_convert.py, weight_adapter/, float.py
@783545f6, whole files) beside the pinned loading pieces (loader.py), with what they import
from the rest of ComfyUI stubbed:

- `comfy.utils`: the loader's stub (key plumbing) plus ComfyUI's own `UTILS` (the diffusers
  tables and `string_to_seed`), compiled from comfy/utils.py @783545f6;
- `comfy.model_management.cast_to_device(t, device, dtype, copy=False)`: `t.to(device, dtype)`
  (the CPU case of the real one, which only adds non-blocking / stream handling);
- `comfy.model_base`: one empty class per model type `model_lora_keys_unet` tests with
  isinstance (the stand-in model is an instance of the family's class);
- `comfy.memory_management`, `comfy.patcher_extension.PatcherInjection`: empty (read only by
  code the tests do not run);
- `comfy.float`: the real file, replacing the loader's stub, so `quant_ops`' quantizers run
  ComfyUI's stochastic rounding.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from pathlib import Path
from typing import Any

from .loader import Comfy, load
from .source import function_source

#: what model_lora_keys_unet calls in comfy.utils, compiled from its own source (in order:
#: the tables before the functions that read them)
UTILS = (
    "unet_to_diffusers",
    "flux_to_diffusers",
    "string_to_seed",
    "swap_scale_shift",
    "MMDIT_MAP_BASIC",
    "MMDIT_MAP_BLOCK",
    "mmdit_to_diffusers",
    "PIXART_MAP_BASIC",
    "PIXART_MAP_BLOCK",
    "pixart_to_diffusers",
    "auraflow_to_diffusers",
    "krea2_to_diffusers",
    "z_image_to_diffusers",
)


class _Classes(types.ModuleType):
    """comfy.model_base: any class name asked for is an empty class (made once)."""

    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        cls = type(name, (), {})
        setattr(self, name, cls)
        return cls


class ComfyLora(types.SimpleNamespace):
    comfy: Comfy
    lora: Any
    lora_convert: Any
    float: Any
    string_to_seed: Any
    model_base: Any


def _module(name: str, path: Path, package: bool = False) -> Any:
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(path.parent)] if package else None
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_lora_code(root: Path) -> ComfyLora:
    import torch

    comfy = load(root)
    package = sys.modules["comfy"]
    utils_ns: dict[str, Any] = {"torch": torch, "logging": logging}
    for name in UTILS:
        exec(compile(function_source(root / "comfy/utils.py", name), "utils.py", "exec"), utils_ns)
        setattr(package.utils, name, utils_ns[name])

    def cast_to_device(
        t: Any, device: Any, dtype: Any, non_blocking: bool = False, copy: bool = False
    ) -> Any:
        return t.to(device=device, dtype=dtype, copy=copy)

    package.model_management.cast_to_device = cast_to_device
    base = _Classes("comfy.model_base")
    sys.modules["comfy.model_base"] = package.model_base = base
    for name, attrs in (
        ("comfy.memory_management", {}),
        ("comfy.patcher_extension", {"PatcherInjection": type("PatcherInjection", (), {})}),
    ):
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
        setattr(package, name.split(".")[1], module)
    package.__path__ = [str(root / "comfy")]
    package.float = _module("comfy.float", root / "comfy/float.py")
    package.weight_adapter = _module(
        "comfy.weight_adapter", root / "comfy/weight_adapter/__init__.py", package=True
    )
    package.lora = _module("comfy.lora", root / "comfy/lora.py")
    package.lora_convert = _module("comfy.lora_convert", root / "comfy/lora_convert.py")
    return ComfyLora(
        comfy=comfy,
        lora=package.lora,
        lora_convert=package.lora_convert,
        float=package.float,
        string_to_seed=utils_ns["string_to_seed"],
        model_base=base,
    )
