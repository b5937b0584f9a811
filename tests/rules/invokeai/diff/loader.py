"""InvokeAI's executed loader module from its extracted wheel: `comfyui_state_dict_utils`
imports only torch; it is loaded alone, by path."""

from __future__ import annotations

import types
from pathlib import Path

from ...consumer_wheels import load_module, required
from .wheel import VERSION, extract


def load_invokeai(root: Path) -> types.ModuleType:
    """InvokeAI's `comfyui_state_dict_utils` module (as `_qc_invokeai_utils`)."""
    return load_module(
        "_qc_invokeai_utils",
        root / "invokeai/backend/model_manager/load/model_loaders/comfyui_state_dict_utils.py",
    )


def load(into: Path) -> types.ModuleType:
    """The module from the pinned wheel (extracted under `into`). Skips the test without
    torch; fails it when the wheel cannot be downloaded."""
    import pytest

    pytest.importorskip("torch")
    return load_invokeai(required("invokeai", VERSION, extract(into)))
