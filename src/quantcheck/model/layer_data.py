"""Numeric access to one layer of a checkpoint: read its tensors, dequantize it (numpy).

Whether a layer's numbers may be read is the caller's policy, not the model's: the caller
passes a gate (`quantcheck.load` passes the rules' `numeric_refusal`); no gate, no refusal.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from quantcheck.formats.dims import derive_dims
from quantcheck.formats.table import FORMATS

if TYPE_CHECKING:
    import numpy as np

    from quantcheck.model.checkpoint import Checkpoint
    from quantcheck.model.layers import Layer

#: Why the numeric code must not touch a layer (None: it may), asked before `dequantize`.
Gate = Callable[["Layer"], "str | None"]

#: Largest tensor `read` loads in one piece (a guard against lying headers; 16 GiB).
MAX_TENSOR_BYTES = 16 * 2**30


class PaddedShapeWarning(UserWarning):
    """The logical [N, K] of a padded layer could not be recovered; padding is returned."""


class LayerData:
    """A layer handle bound to its checkpoint: `read(suffix)`, `dequantize(shape=None)`."""

    def __init__(self, ck: Checkpoint, layer: Layer, gate: Gate | None = None) -> None:
        self.ck = ck
        self.layer = layer
        self.gate = gate

    @property
    def prefix(self) -> str:
        return self.layer.prefix

    @property
    def format(self) -> str | None:
        fmt = self.layer.format
        return fmt if isinstance(fmt, str) else None

    def read(self, suffix: str) -> np.ndarray:
        """One tensor of the layer as a numpy array of its stored dtype and shape."""
        from quantcheck.numeric.arrays import from_bytes

        t = self.layer.tensors[suffix]
        if t.nbytes > MAX_TENSOR_BYTES:
            raise ValueError(f"{t.name} is {t.nbytes:,} bytes; refusing to read it whole")
        shard = self.ck.shard_of(t)
        raw = shard.source.read(t.begin, t.nbytes)
        if len(raw) != t.nbytes:
            raise OSError(f"{t.name}: file ends after {len(raw)} of {t.nbytes} bytes")
        return from_bytes(t.dtype, t.shape, raw)

    def logical_shape(
        self, shape: tuple[int, int] | None = None
    ) -> tuple[tuple[int, int] | None, bool]:
        """(shape to slice to, exact?) from `shape`, the marker's orig_shape, or the file."""
        if shape is not None:
            return (int(shape[0]), int(shape[1])), True
        spec = FORMATS.get(self.format or "")
        dims = derive_dims(spec, self.layer) if spec else None
        if dims is None:
            return None, True
        return (dims.N, dims.K), dims.n_exact and dims.k_exact

    def dequantize(
        self, shape: tuple[int, int] | None = None, out_dtype: str = "float32"
    ) -> np.ndarray:
        """The float32 weight of logical shape [N, K].

        For padded NVFP4/MXFP8 layers N and K come from `shape`, the marker's `orig_shape`, or
        what the file proves (N from the bias length; a size that is not a multiple of the pad;
        a stored size whose last row and column hold data, since padding is exactly zero).
        Where they cannot be known the padded shape is returned with its (exactly zero) padding
        and a `PaddedShapeWarning` says so. A layer the gate refuses raises NumericError.
        """
        from quantcheck.numeric import NumericError, dequantize

        why = self.gate(self.layer) if self.gate is not None else None
        if why:
            raise NumericError(f"{self.prefix} is skipped: {why}")
        fmt = self.format
        if fmt is None:
            w = self.read("weight")
            return w.astype("float32")
        tensors: dict[str, Any] = {
            s: self.read(s) for s in self.layer.tensors if s not in ("comfy_quant", "bias")
        }
        marker = dict(self.layer.marker.fields) if self.layer.marker else {"format": fmt}
        want, exact = self.logical_shape(shape)
        out = dequantize(fmt, tensors, marker=marker, shape=want, out_dtype=out_dtype)
        if not exact and out.ndim == 2 and out.size and out[-1].any() and out[:, -1].any():
            exact = True  # padding is exactly zero: data in the last row and column proves it
        if not exact:
            warnings.warn(
                f"{self.prefix}: the logical [N, K] of this padded {fmt} layer is not "
                f"recorded; returning the stored bound {want} including its zero "
                "padding (pass shape=(N, K) to slice it)",
                PaddedShapeWarning,
                stacklevel=2,
            )
        return out
