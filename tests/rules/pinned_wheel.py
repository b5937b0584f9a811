"""A wheel from PyPI, pinned by SHA-256, cached: what the differential suites execute.

`pip download --no-deps` into a cache folder; a wheel whose hash differs from its pin is
refused (RuntimeError naming both hashes). Nothing here is imported by `make test`'s own tests
unless a differential suite is switched on.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pinned_wheel(
    folder: Path,
    name: str,
    pin: str,
    requirement: str,
    pip_args: Sequence[str] = (),
    *,
    download: bool = True,
) -> Path | None:
    """`folder/name` verified against `pin` (fetched with `pip download requirement` first if
    missing and `download`); None when it is not there."""
    path = folder / name
    if not path.exists() and download:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--only-binary=:all:",
                *pip_args,
                requirement,
                "-d",
                str(folder),
            ],
            check=False,
            capture_output=True,
            timeout=600,
        )
    if not path.exists():
        return None
    got = sha256(path)
    if got != pin:
        raise RuntimeError(f"{name}: sha256 {got} is not the pinned {pin}")
    return path
