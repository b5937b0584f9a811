"""Parse `Content-Range` values and `multipart/byteranges` bodies, with hard limits."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from quantcheck.io.http import BodyDropped, RemoteError

MAX_LINE = 1024
MAX_PART_HEADERS = 32
MAX_BLANK = 8
_RANGE = re.compile(r"^bytes\s+(\d{1,20})-(\d{1,20})/(\d{1,20}|\*)$", re.IGNORECASE)
_UNSAT = re.compile(r"^bytes\s+\*/(\d{1,20})$", re.IGNORECASE)


class Body(Protocol):
    def read(self, n: int) -> bytes: ...

    def readline(self, limit: int) -> bytes: ...


def parse_content_range(value: str | None) -> tuple[int, int, int | None] | None:
    """`bytes a-b/total` → (a, b + 1, total or None); None when absent or malformed."""
    if value is None:
        return None
    m = _RANGE.match(value.strip())
    if not m:
        return None
    a, b = int(m.group(1)), int(m.group(2))
    total = None if m.group(3) == "*" else int(m.group(3))
    if b < a or (total is not None and b >= total):
        return None
    return a, b + 1, total


def unsatisfied_total(value: str | None) -> int | None:
    """The total of a 416 answer's `bytes */total`, if given."""
    m = _UNSAT.match((value or "").strip())
    return int(m.group(1)) if m else None


def read_byteranges(
    body: Body,
    boundary: str,
    accept: Callable[[int, int, int | None], None],
    budget: int,
    where: str,
) -> list[tuple[int, bytes]]:
    """Every part of a multipart/byteranges body as (start, data).

    `accept(start, end, total)` raises for a part that was not asked for; `budget` caps the
    bytes of all parts together, so a server cannot make this read more than was asked.
    """
    delim = b"--" + boundary.encode("latin-1")
    parts: list[tuple[int, bytes]] = []
    used = 0
    while True:
        line = _next_line(body, where)
        if line == delim + b"--":
            return parts
        if line != delim:
            raise RemoteError(
                f"{where}: multipart answer is malformed (expected the boundary, got {line[:60]!r})"
            )
        start, end = _part_range(body, where, accept)
        used += end - start
        if used > budget:
            raise RemoteError(
                f"{where}: multipart answer holds more bytes than were asked (over {budget:,})"
            )
        data = body.read(end - start)
        if len(data) != end - start:
            raise BodyDropped(
                f"{where}: short body: multipart part {start}-{end - 1} has "
                f"{len(data)} of {end - start} bytes"
            )
        parts.append((start, data))


def _next_line(body: Body, where: str) -> bytes:
    for _ in range(MAX_BLANK):
        raw = body.readline(MAX_LINE)
        if not raw:
            raise BodyDropped(
                f"{where}: short body: multipart answer ends before its closing boundary"
            )
        line = raw.rstrip(b"\r\n")
        if line:
            return line
    raise RemoteError(f"{where}: multipart answer is malformed (too many blank lines)")


def _part_range(
    body: Body, where: str, accept: Callable[[int, int, int | None], None]
) -> tuple[int, int]:
    found: tuple[int, int, int | None] | None = None
    for _ in range(MAX_PART_HEADERS):
        raw = body.readline(MAX_LINE)
        line = raw.rstrip(b"\r\n")
        if not line:
            if not raw:
                raise BodyDropped(f"{where}: short body inside multipart part headers")
            if found is None:
                raise RemoteError(f"{where}: multipart part has no valid Content-Range")
            accept(*found)
            return found[0], found[1]
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-range":
            found = parse_content_range(value)
    raise RemoteError(f"{where}: multipart part has too many header lines")
