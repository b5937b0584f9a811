"""Bounded nesting for decoded JSON: every later walk (equality, repr, dumps) stays shallow.

`json.loads` accepts values nested almost up to Python's recursion limit; comparing, printing
or re-encoding such a value deeper in the call stack then raises RecursionError. Markers and
index files are flat documents, so decoded values deeper than `MAX_DEPTH` are refused where
they are decoded. Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Deepest nesting accepted in a decoded marker, header marker document or index file.
MAX_DEPTH = 64


#: Exact types of JSON scalars: a value holding only these is no container.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0), counted iteratively; counting
    stops at `limit + 1`, so the cost is bounded by the value's size, never its depth."""
    # fast path: an object or array of scalars only (a marker, most often) is 1 deep
    t = type(value)
    if t is dict:
        if _SCALARS.issuperset(map(type, value.values())):
            return 1
    elif t is list and _SCALARS.issuperset(map(type, value)):
        return 1
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        d += 1
        if d > deepest:
            deepest = d
            if d > limit:
                return d
        stack.extend((c, d) for c in children if isinstance(c, dict | list))
    return deepest


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Why `value` is refused (nested deeper than `limit`), or None."""
    if json_depth(value, limit) > limit:
        return f"JSON is nested more than {limit} levels deep"
    return None


def loads_bounded(raw: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """`json.loads`, with too-deep documents (RecursionError or over `limit`) as ValueError."""
    import json

    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError("JSON is nested too deeply") from None
    deep = too_deep(value, limit)
    if deep:
        raise ValueError(deep)
    return value
