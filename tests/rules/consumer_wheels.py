"""The pure-Python wheels of the consumers' differential suites (InvokeAI, DiffSynth-Studio:
`make diff-consumers`), pinned by SHA-256 in their folders (`<runtime>/diff/wheel.py`).

`pip download --no-deps NAME==V` into one cache folder (`QUANTCHECK_CONSUMER_WHEELS`, default
~/.cache/quantcheck/consumer-wheels); a wheel whose hash differs from its pin is refused. Only
the modules the tests execute are extracted, and each is loaded alone, by path
(`load_module`), its package's `__init__` (which imports the whole framework) not run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import zipfile
from pathlib import Path

from .pinned_wheel import pinned_wheel


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "quantcheck" / "consumer-wheels"
    return Path(os.environ.get("QUANTCHECK_CONSUMER_WHEELS", default))


def extract(
    project: str,
    version: str,
    wheel: tuple[str, str],
    members: tuple[str, ...],
    into: Path,
    *,
    download: bool = True,
) -> Path | None:
    """`members` of the verified `wheel` (file name, sha256; downloaded if missing and
    `download`) under `into/<project>-<version>/` (the tree root), or None without it."""
    name, pin = wheel
    whl = pinned_wheel(cache_dir(), name, pin, f"{project}=={version}", download=download)
    if whl is None:
        return None
    root = into / f"{project}-{version}"
    if not all((root / m).exists() for m in members):
        with zipfile.ZipFile(whl) as z:
            for m in members:
                z.extract(m, root)
    return root


def load_module(name: str, file: Path) -> types.ModuleType:
    """The module at `file`, executed as `name` (and kept in `sys.modules`)."""
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def required(project: str, version: str, root: Path | None) -> Path:
    """`root` (what `extract` gave), or the test fails: the wheel could not be downloaded."""
    if root is None:
        import pytest

        pytest.fail(f"could not download {project}=={version} (pip download --no-deps)")
    return root
