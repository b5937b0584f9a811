"""Machine-readable output (schema documented in docs/json-schema.md).

Every JSON document quantcheck prints or writes starts with the same four keys:
`schema_version`, `tool`, `tool_version` (quantcheck's version, from `_version.py` like
`--version`) and `kind` (the command that made it). `document_head` makes them.
"""

from __future__ import annotations

import json

from quantcheck._version import document_head
from quantcheck.textsafe import json_safe

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, TextIO

    from quantcheck.results import Report

#: Bumped only when a field is removed or changes meaning; adding fields keeps it.
SCHEMA_VERSION = 1


def envelope(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` behind the common keys (`doc`'s own values for them win, so they cannot drift)."""
    return {**document_head(kind, SCHEMA_VERSION), **doc}


def dumps(kind: str, doc: dict[str, Any]) -> str:
    return json_safe(json.dumps(envelope(kind, doc), indent=2, ensure_ascii=False))


def render(report: Report) -> str:
    """`check --output-format json`."""
    return dumps("check", report.to_json())


class Stream:
    """A JSON array in a document given to `iter_dumps`, whose items are made one at a time
    (e.g. a generator of diagnostics' dicts): never held all at once."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def iter_dumps(value: Any, level: int = 0) -> Iterator[str]:
    """`json_safe(json.dumps(value, indent=2, ensure_ascii=False))` in pieces, byte for byte,
    with every `Stream` in `value` written as an array item by item.

    Dicts and lists are walked (the envelope is small); every other value and every streamed
    item is one `json.dumps` re-indented to its depth (JSON strings hold no raw newline, so the
    only newlines are indentation). `json_safe` is applied per piece: it replaces single
    characters, so piecewise and whole give the same text.
    """
    if isinstance(value, Stream):
        pad = "\n" + "  " * (level + 1)
        opener = "["
        for item in value.items:
            text = json.dumps(item, indent=2, ensure_ascii=False)
            yield json_safe(opener + pad + text.replace("\n", pad))
            opener = ","
        yield "[]" if opener == "[" else "\n" + "  " * level + "]"
    elif isinstance(value, (dict, list)) and value:
        pad = "\n" + "  " * (level + 1)
        opener = "{" if isinstance(value, dict) else "["
        pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        for key, item in pairs:
            head = opener + pad
            if key is not None:
                head += json.dumps(key, ensure_ascii=False) + ": "
            yield json_safe(head)
            yield from iter_dumps(item, level + 1)
            opener = ","
        yield "\n" + "  " * level + ("}" if isinstance(value, dict) else "]")
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        yield json_safe(text.replace("\n", "\n" + "  " * level) if level else text)


def write_chunks(out: TextIO, chunks: Iterable[str], batch: int = 256) -> bool:
    """Write `chunks` to `out` a batch at a time (few large writes, bounded memory); whether
    any text was written."""
    buf: list[str] = []
    wrote = False
    for chunk in chunks:
        if chunk:
            buf.append(chunk)
            if len(buf) >= batch:
                out.write("".join(buf))
                buf.clear()
                wrote = True
    if buf:
        out.write("".join(buf))
        wrote = True
    return wrote


def join_lines(lines: Iterable[str]) -> Iterator[str]:
    """`"\n".join(lines)` in pieces."""
    first = True
    for line in lines:
        if not first:
            yield "\n"
        first = False
        yield line
