"""DiffSynth-Studio's executed modules from its extracted wheel, other imports stubbed.

`core/quant/base.py` (torch, dataclasses) and `backends/comfy_kitchen.py` (torch,
comfy-kitchen) run unmodified; their packages are empty modules (the real `__init__` files
import the whole framework) and `core/quant/config.py` is a stub whose `register_quant_method`
records nothing. `utils/lora/general.py` (torch and warnings only) is loaded alone, by path.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from ...consumer_wheels import load_module, required
from .wheel import VERSION, extract


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
    load_module("diffsynth.core.quant.base", quant / "base.py")
    _package("diffsynth.core.quant.backends")
    return load_module(
        "diffsynth.core.quant.backends.comfy_kitchen", quant / "backends/comfy_kitchen.py"
    )


def load_diffsynth_lora(root: Path) -> types.ModuleType:
    """DiffSynth-Studio's `utils/lora/general.py` (GeneralLoRALoader)."""
    return load_module("_qc_diffsynth_lora_general", root / "diffsynth/utils/lora/general.py")


def load(into: Path) -> types.ModuleType:
    """The quant backend from the pinned wheel (extracted under `into`). Skips the test
    without torch or comfy-kitchen; fails it when the wheel cannot be downloaded."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("comfy_kitchen")
    return load_diffsynth(required("diffsynth", VERSION, extract(into)))
