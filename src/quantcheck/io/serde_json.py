"""JSON decoding with serde_json's acceptance rules, as safetensors 0.8.0 parses its header.

Python's `json` module does the tokenising; hooks and one tree walk close the gaps so that a
text is accepted exactly when serde_json accepts it:

- `NaN`/`Infinity` are rejected; a float (or an integer too large for `u64`/`i64`) whose value
  overflows `f64` is rejected ("number out of range");
- lone UTF-16 surrogates from `\\u` escapes are rejected;
- containers may nest at most 127 deep (serde_json's recursion limit is 128).

Numbers keep serde_json's classes: an `int` is a `u64` (>= 0) or an `i64` (< 0); every other
number, including `-0` and integers beyond those ranges, is a `float` (serde's `f64`).
Objects come back as `JsonObject`, keeping duplicate keys and their document order.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 127
_U64_MAX = 2**64 - 1
_I64_MIN = -(2**63)
_SURROGATE = re.compile("[\ud800-\udfff]")

# Python's messages -> serde_json's wording, for the error text only.
_MESSAGES = (
    ("Expecting value", "expected value"),
    ("Extra data", "trailing characters"),
    (
        "Invalid control character",
        "control character (\\u0000-\\u001F) found while parsing a string",
    ),
    ("Invalid \\escape", "invalid escape"),
    ("Invalid \\uXXXX escape", "invalid escape"),
    ("Unterminated string", "EOF while parsing a string"),
    ("Expecting ',' delimiter", "expected `,`"),
    ("Expecting ':' delimiter", "expected `:`"),
    ("Expecting property name", "key must be a string"),
    ("Unexpected UTF-8 BOM", "expected value"),
)


class HeaderJsonError(ValueError):
    """The text is not JSON that serde_json would accept; the message is serde-like."""


@dataclass(frozen=True, slots=True)
class JsonObject:
    """A JSON object as its (key, value) pairs in document order, duplicates included."""

    pairs: tuple[tuple[str, Any], ...]


def _object(pairs: list[tuple[str, Any]]) -> JsonObject:
    return JsonObject(tuple(pairs))


def _parse_int(text: str) -> int | float:
    digits = text.lstrip("-")
    if len(digits) <= 20:
        value = int(text)
        if text.startswith("-"):
            if value == 0:
                return -0.0
            if value >= _I64_MIN:
                return value
        elif value <= _U64_MAX:
            return value
    return _parse_float(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise HeaderJsonError("number out of range")
    return value


def _reject_constant(_name: str) -> Any:
    raise HeaderJsonError("expected value")


def _describe(exc: json.JSONDecodeError) -> str:
    text = exc.msg
    for python_text, serde_text in _MESSAGES:
        if text.startswith(python_text):
            text = serde_text
            break
    return f"{text} at line {exc.lineno} column {exc.colno}"


def _check_tree(root: Any) -> None:
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                raise HeaderJsonError("lone leading surrogate in hex escape")
        elif isinstance(node, (list, JsonObject)):
            depth += 1
            if depth > MAX_DEPTH:
                raise HeaderJsonError("recursion limit exceeded")
            if isinstance(node, list):
                stack.extend((item, depth) for item in node)
            else:
                for key, value in node.pairs:
                    stack.append((key, depth))
                    stack.append((value, depth))


def decode(text: str) -> Any:
    """Decode `text` as serde_json would, or raise `HeaderJsonError`."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as exc:
        raise HeaderJsonError(_describe(exc)) from None
    except RecursionError:
        raise HeaderJsonError("recursion limit exceeded") from None
    _check_tree(value)
    return value
