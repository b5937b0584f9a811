"""What machine a benchmark ran on (its figures mean nothing without it)."""

from __future__ import annotations

import platform


def cpu_name() -> str:
    """The CPU's model name (Linux), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
