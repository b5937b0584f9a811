"""Fixtures for the rule tests: the committed test data and the comfy-kitchen oracle.

The data in `tests/data/` is part of the repository, so a missing file fails the test that reads
it. The oracle skips with a reason when comfy-kitchen is not installed, and fails when `CI=true`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Committed test data (see tests/data/README.md).
DATA = REPO / "tests" / "data"
#: sglang 0.5.23 reference checkpoints with their recorded outcomes.
SGLANG_CASES = DATA / "sglang-cases"
#: The two error records the project started from.
SEEDS = DATA / "seeds"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def skip_or_fail(reason: str) -> None:
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so it must be present", pytrace=False)
    pytest.skip(reason)


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


#: Cases of ComfyUI's release-step findings (reported only when per-release verdicts are asked).
RELEASE_STEP_CODES = ("QC606", "QC607", "QC608", "QC609")


@pytest.fixture(autouse=True)
def _comfyui_release_steps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Report QC606-QC609 in the tests that are about them."""
    if any(code in request.node.name for code in RELEASE_STEP_CODES):
        from quantcheck.rules.comfyui import checks

        monkeypatch.setattr(checks, "REPORT_STEPS", True)
