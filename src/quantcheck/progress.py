"""A minimal progress bar on stderr: drawn only when stderr is a terminal, silent otherwise.

`Progress(total, label)` counts items (`advance(label)`) or bytes (`p(n)` with `unit="bytes"`);
use it as a context manager or call `close()`. `QUANTCHECK_QUIET=1` silences it.
"""

from __future__ import annotations

import os
import sys
import time

from quantcheck.textsafe import clean

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import TextIO


class Progress:
    """Counts towards `total`; redraws at most 10 times a second."""

    def __init__(
        self,
        total: int,
        label: str = "",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        unit: str = "items",
    ) -> None:
        self.stream = stream or sys.stderr
        self.total = max(total, 1)
        self.label = clean(label)
        self.unit = unit
        self.done = 0
        self.item = ""
        if enabled is None:
            enabled = self.stream.isatty() and not os.environ.get("QUANTCHECK_QUIET")
        self.enabled = enabled
        self._last = 0.0
        self._start = time.monotonic()

    def __call__(self, n: int) -> None:
        """Add `n` (bytes or items) and redraw if due."""
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self._draw()

    def advance(self, item: str = "", n: int = 1) -> None:
        """One more item done; `item` names it on the bar."""
        self.item = clean(item)
        self(n)

    def _draw(self) -> None:
        frac = min(self.done / self.total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        elapsed = max(time.monotonic() - self._start, 1e-6)
        if self.unit == "bytes":
            rate = f"{self.done / elapsed / 2**20:7.1f} MiB/s"
        else:
            eta = (self.total - self.done) * elapsed / max(self.done, 1)
            rate = f"{self.done}/{self.total} eta {eta:4.0f}s {self.item[-40:]:<40}"
        self.stream.write(f"\r{self.label} [{bar}] {frac * 100:5.1f}% {rate}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
