"""Terminal styling: ANSI colours only on a TTY and when NO_COLOR is unset."""

from __future__ import annotations

import os
import sys

CODES = {
    "red": "31",
    "yellow": "33",
    "blue": "34",
    "green": "32",
    "bold": "1",
    "dim": "2",
    "cyan": "36",
}


def use_color(stream: object = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, enabled: bool) -> str:
    if not enabled:
        return text
    return "".join(f"\x1b[{CODES[s]}m" for s in style.split()) + text + "\x1b[0m"


SEVERITY_STYLE = {"error": "red bold", "warning": "yellow bold", "info": "blue"}
STATUS_STYLE = {"ok": "green bold", "degraded": "yellow bold", "fails": "red bold"}
