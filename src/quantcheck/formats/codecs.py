"""Codecs registered against the format table: format name -> quantize / dequantize callables.

The table names each format's codec module (`FormatSpec.codec`); that module registers its
callables with `register_codec` when it is imported (importing `quantcheck.numeric.api` imports
them all). `codec(name)` imports the module on first use, so the table and the check path never
import numpy. Registering a format twice, or one the table does not hold, is an error.

Callables (numpy arrays; options already merged with the table's defaults):
- `quantize(w, fmt, options) -> {suffix: array}`: the tensors of `FormatSpec.written`;
- `dequantize(tensors, fmt, options, out_dtype) -> array`: the stored [rows, cols] weight in
  F32 (padding is cropped by the caller); `options` are the marker keys with their defaults.
"""

from __future__ import annotations

from collections.abc import Callable

from quantcheck._record import record
from quantcheck.formats.table import FORMATS

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any


@record
class Codec:
    """The numeric implementation of one format."""

    format: str
    module: str
    dequantize: Callable[..., Any]
    quantize: Callable[..., Any] | None = None


_CODECS: dict[str, Codec] = {}


def register_codec(
    fmt: str, *, dequantize: Callable[..., Any], quantize: Callable[..., Any] | None = None
) -> Codec:
    """Register `fmt`'s codec (called by the codec module itself when imported)."""
    spec = FORMATS.get(fmt)
    if spec is None:
        raise ValueError(f"cannot register a codec for {fmt!r}: not in the format table")
    if fmt in _CODECS:
        raise ValueError(f"a codec for {fmt!r} is already registered (by {_CODECS[fmt].module})")
    if (quantize is not None) != spec.quantizable:
        raise ValueError(
            f"{fmt}: the table says quantizable={spec.quantizable}, the codec "
            f"{'has' if quantize else 'has no'} quantizer"
        )
    module = getattr(dequantize, "__module__", "?")
    _CODECS[fmt] = c = Codec(fmt, module, dequantize, quantize)
    return c


def codec(fmt: str) -> Codec:
    """The codec of `fmt`, importing its module on first use; KeyError if it has none."""
    hit = _CODECS.get(fmt)
    if hit is None:
        spec = FORMATS.get(fmt)
        if spec is None or not spec.codec:
            raise KeyError(fmt)
        import importlib

        importlib.import_module(spec.codec)
        hit = _CODECS[fmt]
    return hit


def registered() -> dict[str, Codec]:
    """Codecs registered so far, by format."""
    return dict(_CODECS)
