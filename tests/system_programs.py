"""System programs tests need: skip locally when missing, fail under `CI=true`."""

from __future__ import annotations

import os
import shutil

import pytest

#: How a skip for a missing program starts (the closing summary line counts these).
SKIP_PREFIX = "system program "


def missing_program(reason: str) -> str | None:
    """The program a skip reason made by `require_program` names, else None."""
    start = reason.find(SKIP_PREFIX + "'")
    if start < 0:
        return None
    rest = reason[start + len(SKIP_PREFIX) + 1 :]
    return rest.split("'", 1)[0] or None


def in_ci() -> bool:
    """True when running under CI (`CI=true`, as GitHub Actions and most CI systems set)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def require_program(name: str) -> str:
    """Path of system program `name`; skip when missing locally, fail when missing under CI."""
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"{SKIP_PREFIX}{name!r} is not installed (not found on PATH)"
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so the CI image must provide it", pytrace=False)
    pytest.skip(f"{reason}; install it to run this test")
