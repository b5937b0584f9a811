"""Byte spans already fetched from a remote file, and planning of what is still missing."""

from __future__ import annotations

from bisect import bisect_right


class SpanCache:
    """Non-overlapping fetched spans `[start, start + len(data))`, sorted by start."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._data: list[bytes] = []

    def add(self, start: int, data: bytes) -> None:
        """Remember `data` at `start`; parts already held are kept, not replaced."""
        end = start + len(data)
        for s, e in self.missing(start, end):
            i = bisect_right(self._starts, s)
            self._starts.insert(i, s)
            self._data.insert(i, data[s - start : e - start])

    def missing(self, start: int, end: int) -> list[tuple[int, int]]:
        """Sub-spans of `[start, end)` not held, as (begin, end) pairs."""
        gaps: list[tuple[int, int]] = []
        pos = start
        i = max(bisect_right(self._starts, start) - 1, 0)
        while pos < end and i < len(self._starts):
            s = self._starts[i]
            e = s + len(self._data[i])
            if e <= pos:
                i += 1
                continue
            if s >= end:
                break
            if s > pos:
                gaps.append((pos, s))
            pos = max(pos, e)
            i += 1
        if pos < end:
            gaps.append((pos, end))
        return gaps

    def forget(self, start: int, end: int) -> None:
        """Drop held spans that lie wholly inside `[start, end)`."""
        keep = [
            (s, d)
            for s, d in zip(self._starts, self._data, strict=True)
            if not (start <= s and s + len(d) <= end)
        ]
        self._starts = [s for s, _ in keep]
        self._data = [d for _, d in keep]

    @property
    def held(self) -> int:
        """Bytes held."""
        return sum(len(d) for d in self._data)

    def get(self, start: int, end: int) -> bytes:
        """The bytes of `[start, end)`; every part must be held (check `missing` first)."""
        out = bytearray()
        pos = start
        i = max(bisect_right(self._starts, start) - 1, 0)
        while pos < end and i < len(self._starts):
            s = self._starts[i]
            d = self._data[i]
            if s <= pos < s + len(d):
                take = d[pos - s : end - s]
                out += take
                pos += len(take)
            i += 1
        if pos < end:
            raise KeyError(f"bytes {pos}-{end} were not fetched")
        return bytes(out)


def coalesce(spans: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Sort (begin, end) spans and merge those that overlap or lie within `gap` bytes."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def batches(spans: list[tuple[int, int]], max_header: int) -> list[list[tuple[int, int]]]:
    """Split spans into groups whose `Range: bytes=…` value stays under `max_header` chars."""
    out: list[list[tuple[int, int]]] = []
    size = 0
    for s, e in spans:
        item = len(f"{s}-{e - 1},")
        if not out or size + item > max_header:
            out.append([])
            size = 0
        out[-1].append((s, e))
        size += item
    return out


def range_header(spans: list[tuple[int, int]]) -> str:
    """`bytes=a-b,c-d` for (begin, end) spans (the HTTP end is inclusive)."""
    return "bytes=" + ",".join(f"{s}-{e - 1}" for s, e in spans)
