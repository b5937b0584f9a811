"""`json_depth`: the flat-value fast path gives what the general walk gives."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from quantcheck.io import json_depth as jd


class Text(str):
    pass


class Row(list):  # type: ignore[type-arg]
    pass


VALUES: list[Any] = [
    None,
    0,
    1.5,
    True,
    "s",
    {},
    [],
    {"format": "float8_e4m3fn"},
    {"a": 1, "b": None, "c": 2.0, "d": False, "e": "x"},
    [1, "a", None],
    {"a": {}},
    {"a": []},
    {"a": 1, "b": [1, [2, [3]]]},
    [[]],
    [1, {"a": {"b": {}}}],
    {"a": OrderedDict(b=1)},  # a dict subclass is a container
    [Row([1])],  # so is a list subclass
    {"a": Text("x")},  # a str subclass is not
    OrderedDict(a=1),
    Row([1, 2]),
    [[[[[[1]]]]]],
]


def _walk(value: Any, limit: int) -> int:
    """The general walk alone (the fast path switched off)."""
    saved = jd._SCALARS
    jd._SCALARS = frozenset()
    try:
        return jd.json_depth(value, limit)
    finally:
        jd._SCALARS = saved


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 64])
def test_fast_path_agrees_with_the_walk(limit: int) -> None:
    for value in VALUES:
        assert jd.json_depth(value, limit) == _walk(value, limit), value


def test_depths() -> None:
    assert [jd.json_depth(v) for v in ({"a": 1}, [1], {"a": [1]}, 5, {"a": OrderedDict()})] == [
        1,
        1,
        2,
        0,
        2,
    ]
