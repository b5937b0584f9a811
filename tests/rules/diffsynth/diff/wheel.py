"""DiffSynth-Studio's wheel the differential tests run, pinned by SHA-256 (`consumer_wheels.py`
fetches and caches it), and the modules they execute of it."""

from __future__ import annotations

from pathlib import Path

from ...consumer_wheels import extract as _extract

VERSION = "2.1.12"
#: (wheel file name, sha256 as on PyPI, downloaded 2026-12-03)
WHEEL = (
    "diffsynth-2.1.12-py3-none-any.whl",
    "399ed6012da0309982cfdce9e83a293f00b2f20621e4dde195658d54ff49394f",
)
#: what the tests execute of the wheel
MEMBERS = (
    "diffsynth/core/quant/base.py",
    "diffsynth/core/quant/backends/comfy_kitchen.py",
    "diffsynth/utils/lora/general.py",
)


def extract(into: Path, *, download: bool = True) -> Path | None:
    """The executed modules under `into/diffsynth-2.1.12/` (the tree root), or None."""
    return _extract("diffsynth", VERSION, WHEEL, MEMBERS, into, download=download)
