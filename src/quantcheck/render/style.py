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


def terminal_width() -> int | None:
    """The width tables and long lines are fitted to when stdout is a terminal (its size;
    `COLUMNS` overrides it, as `shutil.get_terminal_size` reads it); None for a pipe or file,
    whatever `COLUMNS` says: nothing is then cut or wrapped, so output written for scripts
    stays the same everywhere."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil

    return shutil.get_terminal_size().columns


def visible_len(line: str) -> int:
    """The printed width of a line (colour codes take none)."""
    import re

    return len(re.sub(r"\x1b\[[0-9;]*m", "", line))


def wrap_parts(head: str, parts: list[str], sep: str, width: int | None) -> str:
    """`head` + `parts` joined by `sep` on one line, or, when wider than `width`, on lines
    that each fit (continuation lines indented under the first part)."""
    line = head + sep.join(parts)
    if width is None or visible_len(line) <= width:
        return line
    lines, cur, empty = [], head, True
    indent = " " * len(head)
    for p in parts:
        if not empty and visible_len(cur + sep + p + sep.rstrip()) > width:
            lines.append(cur + sep.rstrip())
            cur, empty = indent + p, False
        else:
            cur, empty = cur + ("" if empty else sep) + p, False
    lines.append(cur)
    return "\n".join(lines)


def counted(n: int, word: str) -> str:
    """`1 error`, `2 errors`, `0 notes`: a count and its noun, plural unless it is one."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
