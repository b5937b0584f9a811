"""Import the consumers' executed modules from an extracted wheel, other imports stubbed.

InvokeAI: `comfyui_state_dict_utils` imports only torch; it is loaded alone, by path.
DiffSynth-Studio: `core/quant/base.py` (torch, dataclasses) and `backends/comfy_kitchen.py`
(torch, comfy-kitchen) run unmodified; their packages are empty modules (the real
`__init__` files import the whole framework) and `core/quant/config.py` is a stub whose
`register_quant_method` records nothing.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any


def _load(name: str, file: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_invokeai(root: Path) -> types.ModuleType:
    """InvokeAI's `comfyui_state_dict_utils` module (as `_qc_invokeai_utils`)."""
    return _load(
        "_qc_invokeai_utils",
        root / "invokeai/backend/model_manager/load/model_loaders/comfyui_state_dict_utils.py",
    )


def _package(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module


def load_diffsynth(root: Path) -> types.ModuleType:
    """DiffSynth-Studio's `core.quant.backends.comfy_kitchen` module."""
    for name in [n for n in sys.modules if n == "diffsynth" or n.startswith("diffsynth.")]:
        del sys.modules[name]
    for name in ("diffsynth", "diffsynth.core", "diffsynth.core.quant"):
        _package(name)
    config = types.ModuleType("diffsynth.core.quant.config")

    def register_quant_method(*args: Any, **kwargs: Any) -> None:
        return None

    config.register_quant_method = register_quant_method  # type: ignore[attr-defined]
    sys.modules[config.__name__] = config
    quant = root / "diffsynth/core/quant"
    _load("diffsynth.core.quant.base", quant / "base.py")
    _package("diffsynth.core.quant.backends")
    return _load("diffsynth.core.quant.backends.comfy_kitchen", quant / "backends/comfy_kitchen.py")


def load_both(into: Path) -> dict[str, types.ModuleType]:
    """Both consumers' executed modules from their pinned wheels (extracted under `into`),
    by project name. Skips the test without torch or comfy-kitchen; fails it when a wheel
    cannot be downloaded."""
    import pytest

    from .wheels import extract

    pytest.importorskip("torch")
    pytest.importorskip("comfy_kitchen")

    out = {}
    for project, version, load in (
        ("invokeai", "6.14.2", load_invokeai),
        ("diffsynth", "2.1.12", load_diffsynth),
    ):
        root = extract(project, version, into)
        if root is None:
            pytest.fail(f"could not download {project}=={version} (pip download --no-deps)")
        out[project] = load(root)
    return out
