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


#: The fewest characters of the current item's name a progress line shows (more when the
#: terminal is wider: the line fills it).
MIN_ITEM_WIDTH = 20


def eta_text(elapsed: float, done: int, total: int) -> str:
    """The time left at the rate so far: `12s`, `3m05s`, `1h02m`; `--` before any progress."""
    if done <= 0:
        return "--"
    left = max(total - done, 0) * elapsed / done
    secs = int(left + 0.5)
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


def cut_right(text: str, width: int) -> str:
    """`text` in at most `width` characters, its end replaced by `…` when longer (a layer
    name keeps its beginning: `model.diffusion_model.transformer_blocks.1…`)."""
    return text if len(text) <= width else text[: width - 1] + "…"


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
        eta = f"eta {eta_text(elapsed, self.done, self.total)}"
        line = f"{self.label} [{bar}] {frac * 100:5.1f}% "
        if self.unit == "bytes":
            line += f"{self.done / elapsed / 2**20:7.1f} MiB/s {eta}"
        else:
            line += f"{self.done}/{self.total} {eta} "
            room = max(MIN_ITEM_WIDTH, self._columns() - len(line) - 1)
            line += f"{cut_right(self.item, room):<{room}}"
        self.stream.write("\r" + line)
        self.stream.flush()

    def _columns(self) -> int:
        """The terminal's width (80 when the stream is not one)."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            return 80

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
