"""Fixtures for the HTML report tests: the big sparse checkpoint and example paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from report._big import make_big


@pytest.fixture(scope="session")
def big_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 60-block mixed-format checkpoint (about 3,600 tensors, sparse on disk)."""
    return make_big(tmp_path_factory.mktemp("big") / "big.safetensors")
