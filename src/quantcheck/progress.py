"""A minimal progress bar on stderr (only on a TTY; silent otherwise or with QUANTCHECK_QUIET)."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    """`with Progress(total, "compare") as p: p.advance(label)` — redraws at most 10 times/s."""

    def __init__(self, total: int, title: str, enabled: bool | None = None) -> None:
        self.total = max(total, 1)
        self.title = title
        self.done = 0
        self.start = time.monotonic()
        self._last = 0.0
        if enabled is None:
            enabled = sys.stderr.isatty() and not os.environ.get("QUANTCHECK_QUIET")
        self.enabled = enabled

    def advance(self, label: str = "", n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            width = 28
            filled = int(width * self.done / self.total)
            bar = "█" * filled + "·" * (width - filled)
            rate = self.done / max(now - self.start, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0
            sys.stderr.write(f"\r{self.title} {bar} {self.done}/{self.total} "
                             f"eta {eta:4.0f}s {label[-40:]:<40}")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 110 + "\r")
            sys.stderr.flush()
