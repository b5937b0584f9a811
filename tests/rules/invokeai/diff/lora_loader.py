"""Import InvokeAI's LoRA code from its extracted wheel, other imports stubbed.

`backend/patches/layer_patcher.py` and what it executes for a direct patch (the LoRA layer
classes, `OriginalWeightsStorage`, `ModelPatchRaw`, `fp8.FP8_STORAGE_DTYPES`) run unmodified;
every other `invokeai.*` module it imports is a stub, except what the patch reads as values:
`TorchDevice.CPU_DEVICE` (the CPU), `InvokeAILogger.get_logger` (a logger), `MODEL_LOAD_LOCK`
(a read/write lock whose sections do nothing: one thread here).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import types
from pathlib import Path
from typing import Any

#: the InvokeAI modules executed (the others are stubs)
INVOKEAI_REAL = tuple(
    "invokeai.backend." + m
    for m in (
        "patches.layer_patcher",
        "patches.model_patch_raw",
        "patches.pad_with_zeros",
        "patches.layers.base_layer_patch",
        "patches.layers.flux_control_lora_layer",
        "patches.layers.lora_layer",
        "patches.layers.lora_layer_base",
        "patches.layers.param_shape_utils",
        "util.calc_tensor_size",
        "util.fp8",
        "util.original_weights_storage",
    )
)


class _Lock:
    def read_lock(self) -> Any:
        return contextlib.nullcontext()

    def write_lock(self) -> Any:
        return contextlib.nullcontext()


def _value(name: str) -> Any:
    import torch

    if name == "TorchDevice":
        return types.SimpleNamespace(
            CPU_DEVICE=torch.device("cpu"), choose_torch_dtype=lambda *a, **k: torch.bfloat16
        )
    if name == "InvokeAILogger":
        return types.SimpleNamespace(get_logger=logging.getLogger)
    if name == "MODEL_LOAD_LOCK":
        return _Lock()
    if name in ("warning", "info", "error", "debug"):
        return getattr(logging.getLogger("invokeai"), name)
    return type(name, (), {})


class _Stub(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _value(name)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.partition(".")[0] != "invokeai":
            return None
        if fullname in INVOKEAI_REAL:
            return importlib.util.spec_from_file_location(
                fullname, self.root / (fullname.replace(".", "/") + ".py")
            )
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> Any:
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        pass


def load_invokeai_patcher(root: Path) -> types.SimpleNamespace:
    """InvokeAI's LayerPatcher, LoRALayer, ModelPatchRaw and OriginalWeightsStorage."""
    import importlib

    for name in [n for n in sys.modules if n == "invokeai" or n.startswith("invokeai.")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    sys.meta_path.insert(0, _Finder(root))

    def get(name: str) -> Any:
        return importlib.import_module("invokeai.backend." + name)

    return types.SimpleNamespace(
        LayerPatcher=get("patches.layer_patcher").LayerPatcher,
        LoRALayer=get("patches.layers.lora_layer").LoRALayer,
        ModelPatchRaw=get("patches.model_patch_raw").ModelPatchRaw,
        OriginalWeightsStorage=get("util.original_weights_storage").OriginalWeightsStorage,
    )


def unload_invokeai() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    for name in [n for n in sys.modules if n == "invokeai" or n.startswith("invokeai.")]:
        del sys.modules[name]
