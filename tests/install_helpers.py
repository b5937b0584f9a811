"""Building and installing quantcheck as a user does, for the release-path tests.

Builds never write into the checkout: they run on a copy of the files git would ship. Installs
go into fresh virtual environments that see neither this checkout nor the test environment's
packages; their dependencies come from the package index pip is configured with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def source_copy(dest: Path) -> Path:
    """Copy the tracked and the untracked-but-not-ignored files of the checkout to `dest`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout
    for name in filter(None, listed.decode("utf-8", "surrogateescape").split("\0")):
        src = REPO / name
        if not src.is_file():  # deleted in the work tree but still in the index
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest


def user_env(path_prefix: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH or virtualenv of the test run."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    env.update(NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def fresh_venv(dest: Path) -> Path:
    """A new virtual environment at `dest` (pip only); returns its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(dest)], check=True, capture_output=True)
    return dest / "bin"


def run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run `cmd`, capturing text output (never raises on a non-zero exit)."""
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
