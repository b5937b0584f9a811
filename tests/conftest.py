"""Shared fixtures and helpers for every test folder.

- `examples_dir`: the repository's `examples/` folder (the generated example checkpoints).
- `require_program(name)`: the path of a system program; skips the test with a clear reason when
  it is missing locally, but fails it when `CI=true` (CI must install what the tests need).
  Import it (`from conftest import require_program`) or request the fixture of the same name.
- `tests/hostile.py` builds safetensors files byte by byte, broken ones included.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

#: The example files that `quantcheck check` must accept (exit 0).
CLEAN_EXAMPLES = (
    "awq_w4a16.safetensors",
    "fp8_e4m3fn.safetensors",
    "int8_convrot.safetensors",
    "mxfp8.safetensors",
    "nvfp4.safetensors",
    "w4a4_convrot.safetensors",
    "w4a8_codebook.safetensors",
)
BROKEN_EXAMPLE = "broken_seeds.safetensors"


def in_ci() -> bool:
    """True when running under CI (`CI=true`, as GitHub Actions and most CI systems set)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def require_program(name: str) -> str:
    """Path of system program `name`; skip when missing locally, fail when missing under CI."""
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"system program {name!r} is not installed (not found on PATH)"
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so the CI image must provide it", pytrace=False)
    pytest.skip(f"{reason}; install it to run this test")


@pytest.fixture(name="require_program")
def _require_program_fixture() -> Callable[[str], str]:
    """The `require_program` helper as a fixture, for test folders that cannot import it."""
    return require_program


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The examples folder; fails clearly when the example files are missing."""
    missing = [n for n in (*CLEAN_EXAMPLES, BROKEN_EXAMPLE) if not (EXAMPLES / n).is_file()]
    if missing:
        pytest.fail(f"example files missing from {EXAMPLES}: {', '.join(missing)}; run "
                    "`make examples`", pytrace=False)
    return EXAMPLES
