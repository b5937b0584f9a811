"""Fixtures for the rule tests: the shared spec folder and the comfy-kitchen oracle.

Both skip with a reason when absent locally and fail when `CI=true`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def skip_or_fail(reason: str) -> None:
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so it must be present", pytrace=False)
    pytest.skip(reason)


def shared_root() -> Path:
    """`QUANTCHECK_SHARED`, else `shared/` beside the repository (/work/shared for /work/main)."""
    env = os.environ.get("QUANTCHECK_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    root = shared_root()
    if not (root / "spec" / "sglang-cases" / "cases.json").is_file():
        skip_or_fail(f"shared spec folder not found at {root} (set QUANTCHECK_SHARED)")
    return root


@pytest.fixture(scope="session")
def oracle() -> Any:
    """(torch, QuantizedTensor, safetensors.torch.save_file) from the CPU comfy-kitchen."""
    try:
        import torch
        from comfy_kitchen.tensor import QuantizedTensor
        from safetensors.torch import save_file
    except Exception as exc:  # ImportError or a broken torch install
        skip_or_fail(f"comfy-kitchen oracle unavailable: {type(exc).__name__}: {exc}")
    return torch, QuantizedTensor, save_file

