"""ComfyUI's own model detection (@783545f6), imported with its heavy imports stubbed.

Executed unmodified, whole files: `comfy/model_detection.py` (`detect_unet_config`,
`model_config_from_unet` and what they call), `comfy/supported_models.py` (every model config
class and `models`, the list `model_config_from_unet_config` walks),
`comfy/supported_models_base.py` (`BASE.matches`) and `comfy/latent_formats.py` (class
attributes of the configs). From
`comfy/utils.py` the functions detection calls are compiled from their own source text
(`detect_layer_quantization`, `state_dict_prefix_replace`), and from `comfy/sd.py` the
text-encoder detection (`TEModel`, `detect_te_model`). Everything else those files import
(model_base, the text encoders, sd1_clip, diffusers_convert, model_management,
memory_management, nested_tensor) is a stub whose every attribute is an inert class: detection
only reads the state dict's keys and shapes, and building a config only stores its dicts.

The modules are imported into a private `comfy` package and `sys.modules` is restored
afterwards, so the other loaders of this suite (loader.py) are not disturbed.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import sys
import types
from pathlib import Path
from typing import Any

from .source import function_source

#: The files imported whole (path under the tree, module name).
REAL = ("latent_formats", "supported_models_base", "supported_models", "model_detection")


class _Inert(types.ModuleType):
    """A stub module: any attribute is a class that takes any arguments and does nothing."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {"__init__": lambda self, *a, **k: None})
        setattr(self, name, value)
        return value


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds every `comfy.*` module that is not one of the real files: an `_Inert` stub."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.startswith("comfy.") and fullname[len("comfy.") :] not in REAL:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Inert(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class Detection(types.SimpleNamespace):
    """`detect_unet_config(sd, prefix, metadata)`, `model_config_from_unet(sd, prefix, ...)`,
    `unet_prefix_from_state_dict(sd)`, `detect_te_model(sd)` (a TEModel or None), and the
    loaded `supported_models` module."""

    detect_unet_config: Any
    detect_te_model: Any
    model_config_from_unet: Any
    unet_prefix_from_state_dict: Any
    supported_models: Any


def load(root: Path) -> Detection:
    """ComfyUI's detection from the verified tree `root` (see source.py)."""
    import torch

    saved = {n: m for n, m in sys.modules.items() if n == "comfy" or n.startswith("comfy.")}
    for name in saved:
        del sys.modules[name]
    finder = _Stubs()
    sys.meta_path.insert(0, finder)
    try:
        package = types.ModuleType("comfy")
        package.__path__ = [str(root / "comfy")]
        sys.modules["comfy"] = package
        utils_ns: dict[str, Any] = {"torch": torch, "json": json, "logging": logging}
        for name in ("detect_layer_quantization", "state_dict_prefix_replace"):
            src = function_source(root / "comfy/utils.py", name)
            exec(compile(src, "utils.py", "exec"), utils_ns)
        utils = _Inert("comfy.utils")
        utils.__dict__.update({k: v for k, v in utils_ns.items() if callable(v)})
        sys.modules["comfy.utils"] = utils
        package.utils = utils
        modules = {}
        for name in REAL:
            spec = importlib.util.spec_from_file_location(
                f"comfy.{name}", root / f"comfy/{name}.py"
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[f"comfy.{name}"] = module
            spec.loader.exec_module(module)
            setattr(package, name, module)
            modules[name] = module
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == "comfy" or n.startswith("comfy.")]:
            del sys.modules[name]
        sys.modules.update(saved)
    md = modules["model_detection"]
    from enum import Enum

    sd_ns: dict[str, Any] = {"Enum": Enum, "torch": torch, "logging": logging}
    for name in ("TEModel", "detect_te_model"):
        exec(compile(function_source(root / "comfy/sd.py", name), "sd.py", "exec"), sd_ns)
    return Detection(
        detect_te_model=sd_ns["detect_te_model"],
        detect_unet_config=md.detect_unet_config,
        model_config_from_unet=md.model_config_from_unet,
        unet_prefix_from_state_dict=md.unet_prefix_from_state_dict,
        supported_models=modules["supported_models"],
    )


def meta_state_dict(shapes: dict[str, tuple[str, tuple[int, ...]]]) -> dict[str, Any]:
    """A header-only stand-in: one meta tensor per name, with the stored dtype and shape."""
    import torch

    dtypes = {
        "BF16": torch.bfloat16,
        "F16": torch.float16,
        "F32": torch.float32,
        "U8": torch.uint8,
        "I8": torch.int8,
        "F8_E4M3": torch.float8_e4m3fn,
        "F8_E5M2": torch.float8_e5m2,
    }
    return {
        name: torch.empty(shape, dtype=dtypes[dtype], device="meta")
        for name, (dtype, shape) in shapes.items()
    }
