"""safetensors dtype names <-> numpy / ml_dtypes arrays, and raw little-endian bytes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from .errors import NumericError

# safetensors dtype name -> numpy dtype (all little-endian; 1-byte float formats via ml_dtypes).
_NAME_TO_DTYPE: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"),
    "I32": np.dtype("<i4"),
    "U32": np.dtype("<u4"),
    "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "C64": np.dtype("<c8"),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
}
_DTYPE_TO_NAME: dict[np.dtype, str] = {v.newbyteorder("="): k for k, v in _NAME_TO_DTYPE.items()}

DTYPE_NAMES: tuple[str, ...] = tuple(_NAME_TO_DTYPE)


def numpy_dtype(dtype_name: str) -> np.dtype:
    """The numpy dtype for a safetensors dtype name such as ``"BF16"``."""
    try:
        return _NAME_TO_DTYPE[dtype_name]
    except KeyError:
        raise NumericError(f"unsupported safetensors dtype {dtype_name!r}") from None


def dtype_name(array_or_dtype: np.ndarray | np.dtype | type) -> str:
    """The safetensors dtype name of a numpy array or dtype (inverse of :func:`numpy_dtype`)."""
    if isinstance(array_or_dtype, np.ndarray):
        dt = array_or_dtype.dtype
    else:
        dt = np.dtype(array_or_dtype)
    try:
        return _DTYPE_TO_NAME[dt.newbyteorder("=")]
    except KeyError:
        raise NumericError(f"numpy dtype {dt} has no safetensors name") from None


def from_bytes(
    dtype_name: str, shape: Sequence[int], raw: bytes | bytearray | memoryview
) -> np.ndarray:
    """A read-only array of ``shape`` viewing ``raw`` (little-endian safetensors payload)."""
    dt = numpy_dtype(dtype_name)
    shape = tuple(int(s) for s in shape)
    count = math.prod(shape)
    if len(raw) != count * dt.itemsize:
        raise NumericError(
            f"{dtype_name}{list(shape)} needs {count * dt.itemsize} bytes, got {len(raw)}"
        )
    return np.frombuffer(raw, dtype=dt, count=count).reshape(shape)


def to_bytes(array: np.ndarray) -> bytes:
    """The safetensors payload of ``array``: C order, little-endian."""
    dt = array.dtype
    if dt.byteorder == ">":
        array = array.astype(dt.newbyteorder("<"))
    return np.ascontiguousarray(array).tobytes()
