"""Read a safetensors header from a byte source; every container problem becomes a diagnostic.

Standard library only. Never allocates in proportion to a declared shape: sizes are Python
integers, and only the header bytes themselves are read.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from quantcheck.diagnostics import Diagnostic, json_pointer
from quantcheck.dtypes import DTYPES
from quantcheck.io.source import ByteSource

MAX_HEADER = 100_000_000
U64_MAX = 2**64 - 1
ENTRY_KEYS = frozenset({"dtype", "shape", "data_offsets"})


@dataclass(slots=True)
class TensorInfo:
    """One tensor's header entry; offsets are absolute file offsets."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    file: str

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(slots=True)
class Header:
    """A parsed header. `tensors` keeps header order; `usable` is False when parsing failed."""

    file: str
    file_size: int
    header_len: int = 0
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    usable: bool = False

    @property
    def data_start(self) -> int:
        return 8 + self.header_len


class _Duplicates:
    """object_pairs_hook that builds dicts and remembers objects with repeated keys."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set[str] = set()
            for k, _ in pairs:
                if k in seen:
                    self.found.append(k)
                seen.add(k)
        return d


def read_header(source: ByteSource, prefetch: bytes | None = None) -> Header:
    """Parse and validate the header of `source`. Raises only for I/O errors.

    `prefetch` may hold the first bytes of the file already read (remote sources).
    """
    name = source.name
    size = source.size
    h = Header(file=name, file_size=size)
    diags = h.diagnostics

    def diag(code: str, message: str, **kw: Any) -> None:
        diags.append(Diagnostic(code, message, file=name, **kw))

    if size < 8:
        diag("QC101", f"file is {size} bytes; a safetensors file starts with an 8-byte header "
                      "length")
        return h
    head = prefetch if prefetch is not None and len(prefetch) >= 8 else source.read(0, 8)
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER:
        diag("QC102", f"header length is {n:,} bytes; the safetensors limit is "
                      f"{MAX_HEADER:,}")
        return h
    if 8 + n > size:
        diag("QC103", f"header length is {n:,} bytes but the file has only {size - 8:,} bytes "
                      "after the length field")
        return h
    h.header_len = n
    if prefetch is not None and len(prefetch) >= 8 + n:
        raw = prefetch[8 : 8 + n]
    else:
        raw = source.read(8, n)
    if len(raw) != n:
        raise OSError(f"{name}: short read of the header ({len(raw)} of {n} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        diag("QC104", f"header byte {exc.start} is not valid UTF-8 ({exc.reason}); safetensors "
                      "headers are UTF-8 JSON")
        return h
    dups = _Duplicates()
    try:
        doc = json.loads(text, object_pairs_hook=dups)
    except RecursionError:
        diag("QC120", "header JSON is nested too deeply to parse; a safetensors header nests "
                      "3 levels")
        return h
    except ValueError as exc:  # JSONDecodeError, and the int-digits limit
        where = f" at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        diag("QC105", f"header is not valid JSON{where}: {detail}")
        return h
    if not isinstance(doc, dict):
        diag("QC106", f"header JSON is {_json_kind(doc)}; it must be an object of tensor entries")
        return h
    if n % 8:
        diag("QC122", f"header length {n} is not a multiple of 8")
    for key in dict.fromkeys(dups.found):
        diag("QC107", f"key {key!r} appears more than once in one JSON object; parsers keep "
                      "only the last", tensor=key if key in doc else None,
             pointer=json_pointer(key) if key in doc else None)
    h.usable = True
    _read_metadata(doc, h, diag)
    _read_entries(doc, h, diag)
    _check_layout(h, diag)
    return h


def _json_kind(v: Any) -> str:
    if isinstance(v, list):
        return "an array"
    if isinstance(v, str):
        return "a string"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return "a number"


def _read_metadata(doc: dict[str, Any], h: Header, diag: Any) -> None:
    meta = doc.pop("__metadata__", None)
    if meta is None:
        return
    if not isinstance(meta, dict):
        diag("QC108", f"__metadata__ is {_json_kind(meta)}; it must be an object of strings",
             pointer="/__metadata__")
        return
    for k, v in meta.items():
        if isinstance(v, str):
            h.metadata[k] = v
        else:
            diag("QC108", f"__metadata__[{k!r}] is {_json_kind(v)}; metadata values must be "
                          "strings", pointer=json_pointer("__metadata__", k))


BITS = {name: d.bits for name, d in DTYPES.items()}


def _read_entries(doc: dict[str, Any], h: Header, diag: Any) -> None:
    """Validate every tensor entry; the fast path is one pass with no helper calls."""
    base = h.data_start
    tensors = h.tensors
    file = h.file
    bits_of = BITS
    for name, e in doc.items():
        if type(e) is not dict or len(e) != 3 or e.keys() != ENTRY_KEYS:
            _malformed_entry(name, e, diag)
            continue
        dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        bits = bits_of.get(dtype) if type(dtype) is str else None
        numel = 1
        overflow = False
        shape_ok = type(shape) is list
        if shape_ok:
            for d in shape:
                if type(d) is not int or d < 0:
                    shape_ok = False
                    break
                if not overflow:
                    numel *= d
                    # Stop multiplying once past 64 bits: keeps the integer small (no huge
                    # products from many large dims) and, like safetensors' checked multiply,
                    # a later 0 does not undo the overflow.
                    overflow = numel > U64_MAX
        offs_ok = type(offs) is list and len(offs) == 2
        if offs_ok:
            begin, end = offs
            offs_ok = type(begin) is int and type(end) is int and 0 <= begin <= end
        if bits is None or not shape_ok or not offs_ok:
            _bad_fields(name, dtype, bits, shape, shape_ok, offs, offs_ok, diag)
            continue
        total_bits = numel * bits
        if overflow or total_bits > U64_MAX * 8:
            size = ("has more elements than" if overflow
                    else f"is {total_bits // 8:,} bytes, more than")
            diag("QC112", f"shape {json.dumps(shape)[:80]} of {dtype} {size} 64 bits can count",
                 tensor=name, pointer=json_pointer(name, "shape"))
            continue
        if total_bits & 7:
            diag("QC113", f"{numel} elements of {dtype} are {total_bits} bits, not a whole "
                          "number of bytes", tensor=name, pointer=json_pointer(name, "shape"))
            continue
        if total_bits >> 3 != end - begin:
            diag("QC114", f"{dtype} {shape} needs {total_bits // 8:,} bytes but data_offsets "
                          f"span {end - begin:,}", tensor=name,
                 pointer=json_pointer(name, "data_offsets"))
            continue
        if bits < 8 and shape and (shape[-1] * bits) & 7:
            diag("QC119", f"rows of {shape[-1]} {dtype} elements are {shape[-1] * bits} bits; "
                          "rows do not start on byte boundaries", tensor=name,
                 pointer=json_pointer(name, "shape"))
        tensors[name] = TensorInfo(name, dtype, tuple(shape), base + begin, base + end, file)


def _malformed_entry(name: str, e: Any, diag: Any) -> None:
    if type(e) is not dict:
        what = f"is {_json_kind(e)}"
    else:
        missing = sorted(ENTRY_KEYS - e.keys())
        extra = sorted(e.keys() - ENTRY_KEYS)
        what = "; ".join(x for x in (
            f"lacks {', '.join(missing)}" if missing else "",
            f"has unexpected {', '.join(extra)}" if extra else "") if x)
    diag("QC121", f"entry {what}; it must be an object with dtype, shape and data_offsets",
         tensor=name, pointer=json_pointer(name))


def _bad_fields(name: str, dtype: Any, bits: int | None, shape: Any, shape_ok: bool,
                offs: Any, offs_ok: bool, diag: Any) -> None:
    if bits is None:
        diag("QC109", f"dtype {json.dumps(dtype)[:80]} is not a safetensors dtype", tensor=name,
             pointer=json_pointer(name, "dtype"))
    if not shape_ok:
        diag("QC110", f"shape {json.dumps(shape)[:80]} is not a list of non-negative "
                      "integers", tensor=name, pointer=json_pointer(name, "shape"))
    if not offs_ok:
        diag("QC111", f"data_offsets {json.dumps(offs)[:80]} is not [begin, end] with "
                      "0 <= begin <= end", tensor=name, pointer=json_pointer(name, "data_offsets"))


def _check_layout(h: Header, diag: Any) -> None:
    """Offsets tile the data section exactly: no gaps, no overlaps, nothing missing or extra."""
    spans = sorted((t.begin, t.end, t.name) for t in h.tensors.values())
    expected = h.data_start
    prev = None
    for begin, end, name in spans:
        if begin > expected:
            diag("QC115", f"{begin - expected:,} unused bytes before this tensor (after "
                          f"{prev!r})" if prev else f"{begin - expected:,} unused bytes before "
                          "the first tensor", tensor=name,
                 pointer=json_pointer(name, "data_offsets"))
        elif begin < expected:
            diag("QC116", f"bytes [{begin - h.data_start}, {min(end, expected) - h.data_start}) "
                          f"are shared with {prev!r}", tensor=name,
                 pointer=json_pointer(name, "data_offsets"))
        if end >= expected:
            expected = end
            prev = name
    if expected > h.file_size:
        diag("QC117", f"the header declares {expected - h.data_start:,} bytes of tensor data "
                      f"but the file holds {max(h.file_size - h.data_start, 0):,}")
    elif expected < h.file_size:
        diag("QC118", f"{h.file_size - expected:,} bytes after the last tensor are not covered "
                      "by any tensor")
