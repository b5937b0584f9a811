"""The engine's per-layer copies of a finding (`rules/engine.py` `renamed`, `_moved`) keep every
field of the original but the ones they rewrite: they pass the fields by position, so a field
added to or reordered in `Diagnostic` must show up here."""

from __future__ import annotations

from typing import Any

from quantcheck.diagnostics import Diagnostic, Fix
from quantcheck.model.layers import Layer
from quantcheck.rules import engine
from quantcheck.rules.levels import Effect, Safety, Severity

FIELDS = (
    "code",
    "message",
    "file",
    "tensor",
    "layer",
    "pointer",
    "fix",
    "effects",
    "severity",
    "data",
)


def _full(old: str) -> Diagnostic:
    """A finding on layer `old` with every field set to a value of its own."""
    return Diagnostic(
        "QC301",
        "message naming nothing",
        file="a.safetensors",
        tensor=f"{old}.weight_scale",
        layer=old,
        pointer=f"/{old}.weight_scale/shape",
        fix=Fix("do it", Safety.SAFE, "relabel", (("dtype", "U8"),)),
        effects={"sglang": Effect.FAILS},
        severity=Severity.WARNING,
        data={"k": 1},
    )


def _fields(d: Diagnostic) -> dict[str, Any]:
    return {n: getattr(d, n) for n in FIELDS}


def test_the_fields_are_the_ones_copied() -> None:
    assert tuple(Diagnostic.__slots__) == FIELDS


def test_renamed_copies_every_field_and_renames_the_layer() -> None:
    d = _full("blk.0")
    layer = Layer("blk.1")
    got = _fields(engine.renamed(d, "blk.0", layer))
    want = _fields(d) | {
        "tensor": "blk.1.weight_scale",
        "layer": "blk.1",
        "pointer": "/blk.1.weight_scale/shape",
    }
    assert got == want
    assert got["fix"] is d.fix and got["data"] is d.data and got["effects"] is d.effects


def test_moved_copies_every_field_and_renames_layer_and_file() -> None:
    d = _full("blk.0")
    got = _fields(engine._moved(d, "blk.0", "blk.1", {"a.safetensors": "b.safetensors"}))
    want = _fields(d) | {
        "file": "b.safetensors",
        "tensor": "blk.1.weight_scale",
        "layer": "blk.1",
        "pointer": "/blk.1.weight_scale/shape",
    }
    assert got == want
