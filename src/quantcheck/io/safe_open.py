"""A safetensors 0.8.0 `safe_open` look-alike: same acceptance, same exception types.

`SafetensorsFile(path)` opens a file the way the safetensors Python binding does and parses its
header with the Rust crate's rules:

- open failures raise `FileNotFoundError("No such file or directory: <path>")` (whatever the
  cause); a directory or other non-regular file raises `OSError("No such device (os error 19)")`,
  the text of the failing `mmap`;
- everything else raises `SafetensorError("Error while deserializing header: …")`: file shorter
  than 8 bytes, header length over 100 000 000 or past the end of the file, header not UTF-8,
  header JSON that serde_json rejects or that does not fit the header schema (unknown dtype,
  non-string `__metadata__` value, duplicate `__metadata__` or tensor field, …), offsets that
  leave gaps, sizes that disagree with dtype × shape, and data not covering the file exactly.

Duplicate tensor names in one header are not an error: the last entry wins, as in the crate.
Tensor entries may also use serde's sequence form `[dtype, shape, data_offsets]`, and a dtype
may be written `{"U8": null}`; the crate accepts both, so this reader does too.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from quantcheck.io.serde_json import HeaderJsonError, JsonObject, decode
from quantcheck.io.source import NotRegularFileError, open_regular

MAX_HEADER_SIZE = 100_000_000
_USIZE_MAX = 2**64 - 1

# In the order of the Rust enum (it appears in "unknown variant" messages), with bit widths.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
_EXPECTED_VARIANTS = ", ".join(f"`{name}`" for name in DTYPE_BITS)
_TENSOR_FIELDS = ("dtype", "shape", "data_offsets")


class SafetensorError(Exception):
    """Raised where the safetensors package raises its own `SafetensorError`."""


@dataclass(frozen=True, slots=True)
class TensorEntry:
    """One tensor of the header; `begin`/`end` are offsets into the data section."""

    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True, slots=True)
class SafetensorsHeader:
    """A parsed header: `metadata` is None when the header has no `__metadata__` object."""

    header_size: int
    metadata: dict[str, str] | None
    tensors: dict[str, TensorEntry]

    @property
    def data_start(self) -> int:
        """File offset of the data section."""
        return 8 + self.header_size


class _SchemaError(Exception):
    """The JSON is valid but does not deserialize into the header structure."""


def _unexpected(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value!r}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "sequence"
    return "map"


def _usize(value: Any) -> int:
    if type(value) is int and 0 <= value <= _USIZE_MAX:
        return value
    if type(value) is int:
        raise _SchemaError(f"invalid value: integer `{value}`, expected usize")
    raise _SchemaError(f"invalid type: {_unexpected(value)}, expected usize")


def _dtype(value: Any) -> str:
    if isinstance(value, JsonObject):
        if len(value.pairs) != 1:
            raise _SchemaError("invalid value: map, expected map with a single key")
        name, unit = value.pairs[0]
        if name in DTYPE_BITS and unit is not None:
            raise _SchemaError(f"invalid type: {_unexpected(unit)}, expected unit")
        value = name
    elif not isinstance(value, str):
        raise _SchemaError(f"invalid type: {_unexpected(value)}, expected string or map")
    if value not in DTYPE_BITS:
        raise _SchemaError(f"unknown variant `{value}`, expected one of {_EXPECTED_VARIANTS}")
    return str(value)  # a str by now; `value` is typed Any


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _SchemaError(f"invalid type: {_unexpected(value)}, expected a sequence")
    return tuple(_usize(item) for item in value)


def _offsets(value: Any) -> tuple[int, int]:
    if not isinstance(value, list):
        raise _SchemaError(f"invalid type: {_unexpected(value)}, expected a tuple of size 2")
    if len(value) != 2:
        raise _SchemaError(f"invalid length {len(value)}, expected 2 elements in sequence")
    return _usize(value[0]), _usize(value[1])


_CONVERTERS = {"dtype": _dtype, "shape": _shape, "data_offsets": _offsets}


def _tensor_info(value: Any) -> TensorEntry:
    fields: dict[str, Any] = {}
    if isinstance(value, list):
        if len(value) < 3:
            raise _SchemaError(
                f"invalid length {len(value)}, expected struct TensorInfo with 3 elements"
            )
        for name, item in zip(_TENSOR_FIELDS, value, strict=False):
            fields[name] = _CONVERTERS[name](item)
        if len(value) > 3:
            raise _SchemaError(f"invalid length {len(value)}, expected 3 elements in sequence")
    elif isinstance(value, JsonObject):
        for key, item in value.pairs:
            if key not in _CONVERTERS:
                continue  # serde ignores unknown fields
            if key in fields:
                raise _SchemaError(f"duplicate field `{key}`")
            fields[key] = _CONVERTERS[key](item)
        for name in _TENSOR_FIELDS:
            if name not in fields:
                raise _SchemaError(f"missing field `{name}`")
    else:
        raise _SchemaError(f"invalid type: {_unexpected(value)}, expected struct TensorInfo")
    begin, end = fields["data_offsets"]
    return TensorEntry(fields["dtype"], fields["shape"], begin, end)


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, JsonObject):
        raise _SchemaError(f"invalid type: {_unexpected(value)}, expected a map")
    result: dict[str, str] = {}
    for key, item in value.pairs:
        if not isinstance(item, str):
            raise _SchemaError(f"invalid type: {_unexpected(item)}, expected a string")
        result[key] = item  # duplicate keys: the last value wins
    return result


def _deserialize(root: Any) -> tuple[dict[str, str] | None, dict[str, TensorEntry]]:
    if not isinstance(root, JsonObject):
        raise _SchemaError(f"invalid type: {_unexpected(root)}, expected struct HashMetadata")
    metadata: dict[str, str] | None = None
    seen_metadata = False
    entries: list[tuple[str, Any]] = []
    for key, value in root.pairs:
        if key == "__metadata__":
            if seen_metadata:
                raise _SchemaError("duplicate field `__metadata__`")
            seen_metadata = True
            metadata = _metadata(value)
        else:
            entries.append((key, value))
    tensors: dict[str, TensorEntry] = {}
    for key, value in entries:
        tensors[key] = _tensor_info(value)  # duplicate names: the last entry wins
    return metadata, tensors


def _byte_size(entry: TensorEntry) -> int:
    count = 1
    for dim in entry.shape:
        count *= dim
        if count > _USIZE_MAX:
            raise SafetensorError(
                "Error while deserializing header: "
                "overflow computing buffer size from shape and/or element type"
            )
    bits = count * DTYPE_BITS[entry.dtype]
    if bits > _USIZE_MAX:
        raise SafetensorError(
            "Error while deserializing header: "
            "overflow computing buffer size from shape and/or element type"
        )
    if bits % 8:
        raise SafetensorError(
            "Error while deserializing header: The slice is slicing for subbytes dtypes, "
            "and the slice does not end up at a byte boundary, this is invalid."
        )
    return bits // 8


def _validate(tensors: dict[str, TensorEntry]) -> int:
    """Check the offsets in data order; return the end of the data section."""
    position = 0
    ordered = sorted(tensors.items(), key=lambda item: (item[1].begin, item[1].end, item[0]))
    for name, entry in ordered:
        if entry.begin != position or entry.end < entry.begin:
            raise SafetensorError(
                f"Error while deserializing header: invalid offset for tensor `{name}`"
            )
        position = entry.end
        if entry.end - entry.begin != _byte_size(entry):
            raise SafetensorError(
                "Error while deserializing header: invalid shape, data type, or offset for tensor"
            )
    return position


def _utf8_error(exc: UnicodeDecodeError) -> str:
    if exc.reason == "unexpected end of data":
        return f"incomplete utf-8 byte sequence from index {exc.start}"
    return f"invalid utf-8 sequence of {exc.end - exc.start} bytes from index {exc.start}"


def _pread_exact(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            raise SafetensorError("Error while deserializing header: file changed while reading")
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def parse_header(fd: int, file_size: int) -> SafetensorsHeader:
    """Parse and validate the header of the open file `fd` of `file_size` bytes."""
    prefix = "Error while deserializing header: "
    if file_size < 8:
        raise SafetensorError(prefix + "header too small")
    (header_size,) = struct.unpack("<Q", _pread_exact(fd, 8, 0))
    if header_size > MAX_HEADER_SIZE:
        raise SafetensorError(prefix + "header too large")
    if header_size + 8 > file_size:
        raise SafetensorError(prefix + "invalid header length")
    raw = _pread_exact(fd, header_size, 8)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorError(prefix + "invalid UTF-8 in header: " + _utf8_error(exc)) from None
    try:
        metadata, tensors = _deserialize(decode(text))
    except (HeaderJsonError, _SchemaError) as exc:
        raise SafetensorError(prefix + f"invalid JSON in header: {exc}") from None
    if _validate(tensors) + 8 + header_size != file_size:
        raise SafetensorError(prefix + "incomplete metadata, file not fully covered")
    return SafetensorsHeader(header_size, metadata, tensors)


class SafetensorsFile:
    """An open safetensors file: `header`, sorted `tensor_names()` and raw tensor bytes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        name = os.fspath(path)
        display = os.fsdecode(name)
        try:  # never blocks on a FIFO (the binding's open would: this one refuses it)
            self._fd, info = open_regular(name)
        except (NotRegularFileError, IsADirectoryError):
            raise OSError("No such device (os error 19)") from None
        except OSError:
            raise FileNotFoundError(f"No such file or directory: {display}") from None
        try:
            self.header = parse_header(self._fd, info.st_size)
        except BaseException:
            os.close(self._fd)
            raise

    def tensor_names(self) -> list[str]:
        """Tensor names sorted by code point, as `safe_open(...).keys()` returns them."""
        return sorted(self.header.tensors)

    def read_bytes(self, name: str) -> bytes:
        """The exact byte range of tensor `name`."""
        entry = self.header.tensors[name]
        start = self.header.data_start + entry.begin
        return _pread_exact(self._fd, entry.end - entry.begin, start)

    def close(self) -> None:
        """Release the file descriptor (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SafetensorsFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
