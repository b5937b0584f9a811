"""Fixtures for the numeric tests: ``ck`` is comfy-kitchen (CPU eager) as the oracle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def ck():
    """The ``ckref`` helper module (torch + comfy_kitchen); skip locally, fail on CI if absent."""
    try:
        import ckref
        import comfy_kitchen  # noqa: F401
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or a broken torch install
        reason = f"comfy-kitchen oracle unavailable: {type(exc).__name__}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return ckref
