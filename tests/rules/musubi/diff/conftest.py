"""The two releases' pinned musubi-tuner code (source.py), loaded once per module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from . import loader, loader_036
from .source import ENV, ENV_036, root, root_036


def _loaded(found: Callable[[], Path | None], env: str, load: Callable[[Path], Any]) -> Any:
    pytest.importorskip("torch")
    base = found()
    if base is None:
        pytest.skip(f"set {env} (see source.py)")
    return load(base)


@pytest.fixture(scope="module")
def musubi() -> loader.Musubi:
    """725869d's functions (QUANTCHECK_MUSUBI_SRC)."""
    return _loaded(root, ENV, loader.load)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def musubi036() -> loader_036.Musubi036:
    """0.3.6's functions (QUANTCHECK_MUSUBI_036_SRC)."""
    return _loaded(root_036, ENV_036, loader_036.load)  # type: ignore[no-any-return]
