"""Screenshot an HTML file with headless Chromium (for tests and the docs' pictures)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def find_chromium() -> str | None:
    """Path of a Chromium binary on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


def screenshot(
    html: Path,
    png: Path,
    *,
    width: int = 1400,
    height: int = 2000,
    binary: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Render `html` at `width`×`height` into `png`; raises on failure or timeout."""
    exe = binary or find_chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="qc-chromium-") as profile:
        cmd = [
            exe,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            Path(html).resolve().as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not Path(png).is_file():
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return Path(png)
