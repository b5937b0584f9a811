"""A `str.format` message template matched against one line of a paste in linear time.

A template is a literal start, then fields each followed by a literal: `{x!r}` is a quoted
repr, `{x_shape}` a bracketed shape (`(8, 32)`, `[8]`, `torch.Size([8, 32])`), any other `{x}`
runs to the first occurrence of the literal after it, and a `{x}` ending the template takes
the rest of the line. From a given start every field has exactly one way to match, so the
leftmost match is found by trying starts in order; what would make that quadratic (each
start scanning far ahead for the same literal) is avoided by finding each literal's
occurrences once per line (`Line`) and never evaluating one (field, position) twice. Work is
counted in `Line.steps` (characters scanned plus lookups), which the tests compare across
sizes.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

_FIELD = re.compile(r"\{(\w+)(!r)?\}")
_SIZE = "torch.Size("
_OPEN, _CLOSE = "([", ")]"
_BRACKET = re.compile(r"[()\[\]]")


class Line:
    """One line of a paste (no newline), with the positions of each literal found in it,
    searched once and lazily; shared by every template tried on the line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.steps = 0
        self._found: dict[str, list[int]] = {}
        self._scanned: dict[str, int] = {}  # where the next search for a literal starts

    def next_at(self, literal: str, pos: int) -> int:
        """The first occurrence of `literal` starting at or after `pos`, or -1."""
        return self._next(literal, pos, self.text.find)

    def next_bracket(self, pos: int) -> int:
        """The first of `()[]` at or after `pos` (where a shape's contents end), or -1."""
        return self._next(_BRACKET.pattern, pos, self._bracket_at)

    def _bracket_at(self, _: str, start: int) -> int:
        m = _BRACKET.search(self.text, start)
        return m.start() if m else -1

    def _next(self, key: str, pos: int, find: Callable[[str, int], int]) -> int:
        """Every occurrence before `_scanned[key]` is in `_found[key]` (sorted), so each
        character is searched once per literal, whatever order positions are asked in."""
        self.steps += 1
        found = self._found.setdefault(key, [])
        k = bisect.bisect_left(found, pos)
        if k < len(found):
            return found[k]
        scanned = self._scanned.get(key, 0)
        while scanned <= len(self.text):
            i = find(key, scanned)
            self.steps += (len(self.text) if i < 0 else i) - scanned + 1
            if i < 0:
                break
            found.append(i)
            scanned = i + 1
            if i >= pos:
                self._scanned[key] = scanned
                return i
        self._scanned[key] = len(self.text) + 1
        return -1


class Template:
    """A compiled template: `search(line)` gives the values of its leftmost match, or None."""

    def __init__(self, template: str) -> None:
        pieces = _FIELD.split(template)  # literal, name, !r, literal, name, !r, ..., literal
        self.lead = pieces[0]
        #: (group name, kind, literal after it); kind is "repr", "shape", "text" or "rest"
        self.fields: list[tuple[str, str, str]] = []
        names: list[str] = []
        for i in range(1, len(pieces), 3):
            name, is_repr, after = pieces[i], pieces[i + 1], pieces[i + 2]
            group = name if name not in names else f"{name}_{len(names)}"
            names.append(group)
            last = i + 3 >= len(pieces)
            if is_repr:
                kind = "repr"
            elif name.endswith("_shape"):
                kind = "shape"
            elif after:
                kind = "text"
            elif last:
                kind = "rest"
            else:
                raise ValueError(f"{template!r}: field {{{name}}} is not followed by text")
            self.fields.append((group, kind, after))
        if not self.lead and (not self.fields or self.fields[0][1] != "text"):
            raise ValueError(f"{template!r}: must start with text or a plain field")
        self.names = tuple(names)
        self.literals = tuple({self.lead, *(after for _, _, after in self.fields)} - {""})

    def search(self, line: Line) -> dict[str, str] | None:
        """The values of the leftmost match in `line`, or None."""
        text = line.text
        for literal in self.literals:  # one scan each: a literal the template needs is absent
            line.steps += len(text)
            if literal not in text:
                return None
        failed: set[tuple[int, int]] = set()
        if self.lead:
            start = line.next_at(self.lead, 0)
            while start >= 0:
                values = self._rest(line, 0, start + len(self.lead), failed)
                if values is not None:
                    return values
                start = line.next_at(self.lead, start + 1)
            return None
        # a leading plain field: every start up to an occurrence of the text after it ends
        # the field there, so one start per occurrence (the one after the previous) is tried
        name, _, after = self.fields[0]
        start, end = 0, line.next_at(after, 1)
        while end >= 0:
            values = self._rest(line, 1, end + len(after), failed)
            if values is not None:
                return {name: line.text[start:end], **values}
            start, end = end, line.next_at(after, end + 1)
        return None

    def _rest(
        self, line: Line, first: int, pos: int, failed: set[tuple[int, int]]
    ) -> dict[str, str] | None:
        """Match fields `first`.. from `pos`; a (field, position) that failed once is not
        tried again (from one position a field matches one way only)."""
        values: dict[str, str] = {}
        path: list[tuple[int, int]] = []
        for k in range(first, len(self.fields)):
            if (k, pos) in failed:
                break
            path.append((k, pos))
            step = self._field(line, self.fields[k], pos)
            if step is None:
                break
            values[self.fields[k][0]], pos = step
        else:
            return values
        failed.update(path)
        return None

    @staticmethod
    def _field(line: Line, field: tuple[str, str, str], pos: int) -> tuple[str, int] | None:
        """(value, position after the field and its literal) for one field at `pos`."""
        _, kind, after = field
        text = line.text
        line.steps += 1
        if kind == "rest":
            return (text[pos:], len(text)) if pos < len(text) else None
        if kind == "text":
            end = line.next_at(after, pos + 1)
            return None if end < 0 else (text[pos:end], end + len(after))
        if kind == "repr":
            quote = text[pos : pos + 1]
            if quote not in ("'", '"'):
                return None
            end = line.next_at(quote, pos + 1)
            if end < 0 or not text.startswith(after, end + 1):
                return None
            return text[pos + 1 : end], end + 1 + len(after)
        inner = pos + len(_SIZE) if text.startswith(_SIZE, pos) else pos
        if text[inner : inner + 1] not in _OPEN:
            return None
        close = line.next_bracket(inner + 1)
        if close < 0 or text[close] not in _CLOSE:
            return None
        for end in (close + 2, close + 1) if text[close + 1 : close + 2] == ")" else (close + 1,):
            if text.startswith(after, end):
                return text[pos:end], end + len(after)
        return None
