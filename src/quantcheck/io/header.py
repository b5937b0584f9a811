"""Read a safetensors header from a byte source; every container problem becomes a diagnostic.

Standard library only. Never allocates in proportion to a declared shape: sizes are Python
integers, and only the header bytes themselves are read.
"""

from __future__ import annotations

import json
import struct
from operator import itemgetter

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic, Severity, json_pointer
from quantcheck.io.dtypes import DTYPES
from quantcheck.io.source import ByteSource
from quantcheck.rules import codes as R
from quantcheck.runtimes import unaffected

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from quantcheck.rules.rule import Rule

MAX_HEADER = 100_000_000
_BY_OFFSETS = itemgetter(3, 4)
U64_MAX = 2**64 - 1
ENTRY_KEYS = frozenset({"dtype", "shape", "data_offsets"})


class TensorInfo(tuple[str, str, tuple[int, ...], int, int, str]):
    """One tensor's header entry: (name, dtype, shape, begin, end, file); offsets absolute.

    A tuple subclass: a header holds thousands, and tuples are the cheapest to build.
    """

    __slots__ = ()

    def __new__(
        cls, name: str, dtype: str, shape: tuple[int, ...], begin: int, end: int, file: str
    ) -> TensorInfo:
        return tuple.__new__(cls, (name, dtype, shape, begin, end, file))

    name: str = property(itemgetter(0))  # type: ignore[assignment]
    dtype: str = property(itemgetter(1))  # type: ignore[assignment]
    shape: tuple[int, ...] = property(itemgetter(2))  # type: ignore[assignment]
    begin: int = property(itemgetter(3))  # type: ignore[assignment]
    end: int = property(itemgetter(4))  # type: ignore[assignment]
    file: str = property(itemgetter(5))  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        return self[4] - self[3]

    @property
    def numel(self) -> int:
        n = 1
        for d in self[2]:
            n *= d
        return n

    def __repr__(self) -> str:
        return (
            f"TensorInfo(name={self[0]!r}, dtype={self[1]!r}, shape={self[2]!r}, "
            f"begin={self[3]}, end={self[4]}, file={self[5]!r})"
        )


@record
class Header:
    """A parsed header. `tensors` keeps header order; `usable` is False when parsing failed."""

    file: str
    file_size: int
    header_len: int = 0
    tensors: dict[str, TensorInfo] = factory(dict)
    metadata: dict[str, str] = factory(dict)
    diagnostics: list[Diagnostic] = factory(list)
    usable: bool = False
    rejected: int = 0  # entries not turned into tensors

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


#: The first bytes of files people mistake for safetensors, and what they are.
MAGIC = (
    (b"GGUF", "a GGUF file"),
    (b"PK\x03\x04", "a zip archive (a PyTorch .pt/.ckpt/.bin checkpoint?)"),
    (b"\x80\x02", "a Python pickle (a PyTorch .pt/.ckpt/.bin checkpoint?)"),
    (b"\x80\x03", "a Python pickle (a PyTorch .pt/.ckpt/.bin checkpoint?)"),
    (b"\x80\x04", "a Python pickle (a PyTorch .pt/.ckpt/.bin checkpoint?)"),
    (b"\x89HDF", "an HDF5 file"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"<", "an HTML or XML page (a download that returned a web page?)"),
)


def not_safetensors(first8: bytes) -> str:
    """Why a file whose length field cannot be right is not a safetensors file at all (it
    starts with text or another format's signature); empty when it may be one."""
    what = next((w for magic, w in MAGIC if first8.startswith(magic)), "")
    if not what and all(32 <= b < 127 or b in (9, 10, 13) for b in first8):
        what = f"text, starting {first8.decode('ascii')!r}"
    if not what:
        return ""
    return f"not a safetensors file (the first 8 bytes are not a header length: the file is {what})"


def read_header(source: ByteSource, prefetch: bytes | None = None) -> Header:
    """Parse and validate the header of `source`. Raises only for I/O errors.

    `prefetch` may hold the first bytes of the file already read (remote sources).
    """
    name = source.name
    size = source.size
    h = Header(file=name, file_size=size)
    diags = h.diagnostics

    def diag(code: Rule, message: str, **kw: Any) -> None:
        diags.append(Diagnostic(code, message, file=name, **kw))

    if size < 8:
        diag(
            R.QC101, f"file is {size} bytes; a safetensors file starts with an 8-byte header length"
        )
        return h
    head = prefetch if prefetch is not None and len(prefetch) >= 8 else source.read(0, 8)
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER or 8 + n > size:
        what = not_safetensors(head[:8])
        if what:
            diag(R.QC102 if n > MAX_HEADER else R.QC103, what)
        elif n > MAX_HEADER:
            diag(R.QC102, f"header length is {n:,} bytes; the safetensors limit is {MAX_HEADER:,}")
        else:
            diag(
                R.QC103,
                f"header length is {n:,} bytes but the file has only {size - 8:,} bytes "
                "after the length field (truncated inside the header? re-download it)",
            )
        return h
    h.header_len = n
    if prefetch is not None and len(prefetch) >= 8 + n:
        raw = prefetch[8 : 8 + n]
    else:
        raw = source.read(8, n)
    if len(raw) != n:
        raise OSError(f"{name}: short read of the header ({len(raw)} of {n} bytes)")
    replay = _REPLAY[0]
    last = _last_clean[0] if replay and _last_clean else None  # one read: threads replace it
    if last is not None and last[0] == raw and last[1] == size:
        return _replay(h, last)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        diag(
            R.QC104,
            f"header byte {exc.start} is not valid UTF-8 ({exc.reason}); safetensors "
            "headers are UTF-8 JSON",
        )
        return h
    try:
        doc = _loads(text)
    except RecursionError:
        diag(
            R.QC120,
            "header JSON is nested too deeply to parse; a safetensors header nests 3 levels",
        )
        return h
    except ValueError as exc:  # JSONDecodeError, and the int-digits limit
        where = f" at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        diag(R.QC105, f"header is not valid JSON{where}: {detail}")
        return h
    escaped = _escaped(text)
    if "\\u" in escaped and _lone_surrogate(doc):
        diag(
            R.QC105,
            "header is not valid JSON: a \\u escape encodes a lone UTF-16 surrogate, "
            "which is not a character (safetensors refuses it)",
        )
        return h
    if not isinstance(doc, dict):
        diag(R.QC106, f"header JSON is {_json_kind(doc)}; it must be an object of tensor entries")
        return h
    if n % 8:
        diag(R.QC122, f"header length {n} is not a multiple of 8")
    h.usable = True
    strings = len(doc)  # every top-level key is a string of the text
    strings += _read_metadata(doc, h, diag)
    more, tiled = _read_entries(doc, h, diag)
    strings += more
    _check_layout(h, diag, tiled)
    for key in dict.fromkeys(_duplicate_keys(text, strings, escaped)):
        diag(
            R.QC107,
            f"key {key!r} appears more than once in one JSON object; parsers keep only the last",
            tensor=key if key in doc else None,
            pointer=json_pointer(key) if key in doc else None,
        )
    if replay and not diags and n <= REPLAY_MAX_HEADER:
        _last_clean[:] = [(raw, size, tuple(h.tensors.values()), tuple(h.metadata.items()))]
    return h


#: Longer headers are never remembered for `_replay` (the remembered bytes stay small).
REPLAY_MAX_HEADER = 1 << 20
#: The last header read without any finding, as (header bytes, file size, its tensors, its
#: metadata items): the checkpoints of one folder often have byte-identical headers.
_last_clean: list[tuple[bytes, int, tuple[TensorInfo, ...], tuple[tuple[str, str], ...]]] = []
#: whether headers are remembered and replayed: only while many checkpoints are checked
#: (`shared_header_replay`), so one file read twice by one process is parsed twice
_REPLAY = [False]


def shared_header_replay(on: bool) -> None:
    """Remember the last clean header and replay it for the next identical one (`on`), or
    stop and forget it. `quantcheck.many` turns it on for the checkpoints of one run."""
    _REPLAY[0] = on
    _last_clean.clear()


def _replay(h: Header, last: tuple[bytes, int, tuple[TensorInfo, ...], tuple[Any, ...]]) -> Header:
    """`h` (header length set) completed from `last`, a header without findings whose bytes and
    file size are those of `h`: parsing depends on nothing else, and only the file name differs
    (it is in each tensor)."""
    _, _, tensors, metadata = last
    file = h.file
    new, TI = tuple.__new__, TensorInfo
    if tensors and tensors[0][5] == file:  # the same file again: the very same records
        h.tensors = {t[0]: t for t in tensors}
    else:
        h.tensors = {t[0]: new(TI, (t[0], t[1], t[2], t[3], t[4], file)) for t in tensors}
    h.metadata = dict(metadata)
    h.usable = True
    return h


_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # json.loads, unwrapped


def _loads(text: str) -> Any:
    """`json.loads(text)`: the scanner called directly (a microsecond less per header); on any
    failure, or anything after the value but JSON whitespace, `json.loads` itself decides
    (the same value, or the exception it raises with its own message)."""
    try:
        doc, end = _scan_once(text, 0)
    except Exception:  # StopIteration, JSONDecodeError, RecursionError, ValueError
        return json.loads(text)
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return json.loads(text)
    return doc


def _escaped(text: str) -> str:
    """The stretch of `text` from its first backslash to one character past its last ("" when
    it has none): every escape sequence of the text lies in it, so searches for escapes need
    only this (ComfyUI's `_quantization_metadata`, a JSON string with escaped quotes, is most
    often the only part of a header with backslashes). Finding a single character is a
    memchr; a search for a 2-character needle over a whole header costs several µs."""
    first = text.find("\\")
    return "" if first < 0 else text[first : text.rfind("\\") + 2]


def _duplicate_keys(text: str, strings: int, escaped: str) -> list[str]:
    """Keys repeated within one JSON object of the header; `escaped` is `_escaped(text)`.

    Fast path: a repeated key drops a key (and its value) from the parsed document, so the
    document then holds fewer strings than the text has. `strings` is how many strings (keys
    and string values) the parsed header holds; when the text has exactly twice as many
    string-delimiting quotes, no key was dropped. Only otherwise is the header parsed again
    with a hook that sees every key. (A quote is a delimiter unless escaped; without `\\\\` in
    the text every backslash starts an escape, so the escaped quotes are exactly the `\\"`,
    all of them in `escaped`.)
    """
    if not escaped:  # no escape at all
        if text.count('"') == 2 * strings:
            return []
    elif "\\\\" not in escaped and text.count('"') - escaped.count('\\"') == 2 * strings:
        return []
    dups = _Duplicates()
    json.loads(text, object_pairs_hook=dups)
    return dups.found


def _strings_in(value: Any) -> int:
    """How many strings (object keys and string values) a parsed JSON value holds; iterative,
    so no nesting depth the parser accepted can overflow the stack."""
    n = 0
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str:
            n += 1
        elif t is dict:
            n += len(v)
            push(v.values())
        elif t is list:
            push(v)
    return n


def _lone_surrogate(doc: Any) -> bool:
    """True when a parsed string holds a lone surrogate (only \\u escapes can produce one)."""
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # nested deeper than a header can be; reported elsewhere
        return False
    return False


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


def _read_metadata(doc: dict[str, Any], h: Header, diag: Any) -> int:
    """Take `__metadata__` out of `doc` into `h.metadata`; returns how many strings (keys and
    string values) it holds, for `_duplicate_keys`."""
    meta = doc.pop("__metadata__", None)
    if meta is None:
        return 0
    if type(meta) is not dict:
        diag(
            R.QC108,
            f"__metadata__ is {_json_kind(meta)}; it must be an object of strings",
            pointer="/__metadata__",
        )
        return _strings_in(meta)
    strings = len(meta)
    for k, v in meta.items():
        if type(v) is str:
            h.metadata[k] = v
            strings += 1
        else:
            diag(
                R.QC108,
                f"__metadata__[{k!r}] is {_json_kind(v)}; metadata values must be strings",
                pointer=json_pointer("__metadata__", k),
            )
            strings += _strings_in(v)
    return strings


BITS = {name: d.bits for name, d in DTYPES.items()}
#: dtypes of whole bytes per element (8 bits or more): rows always start on a byte boundary.
_WHOLE_BYTES = {name: bits >> 3 for name, bits in BITS.items() if bits >= 8}


def _read_entries(doc: dict[str, Any], h: Header, diag: Any) -> tuple[int, int]:
    """Validate every tensor entry. Returns how many strings (keys, string values) the
    entries' values hold (for `_duplicate_keys`; the names are counted by the caller), and
    where the data ends when every entry took the fast path and each tensor starts where the
    previous one ended (offsets relative to the data section), else -1.

    The fast path takes an entry with exactly dtype, shape and data_offsets, a dtype of whole
    bytes, a shape of positive integers and offsets that span exactly its bytes: all a valid
    header's entries but empty tensors, in a few tests each. Any other entry goes through
    `_read_entry`, which validates it field by field and reports what is wrong.
    """
    base = h.data_start
    tensors = h.tensors
    file = h.file
    width_of = _WHOLE_BYTES
    new, TI = tuple.__new__, TensorInfo
    slow = 0  # entries off the fast path
    strings = 0  # strings in the values of those entries
    pos = 0  # end of the tensors so far while they tile the data in header order, else -1
    for name, e in doc.items():
        try:
            # TypeError: the entry is not an object (of the JSON values only an object takes
            # a string subscript), the dtype is unhashable or the offsets are not a sequence;
            # KeyError: a field is missing or the dtype is unknown; ValueError: not 2 offsets
            dtype, shape, (begin, end) = e["dtype"], e["shape"], e["data_offsets"]
            width = width_of[dtype]  # only a str is a key
        except (KeyError, TypeError, ValueError):
            pass
        else:
            if len(e) == 3 and type(shape) is list:  # len: no other field
                # the shape as a tuple too: built from the unpacked dims (cheaper than
                # calling tuple) for the common 1 and 2 dims
                nd = len(shape)
                dims: tuple[int, ...]
                if nd == 2:
                    a, b = shape
                    dims = (a, b)
                    numel = a * b if type(a) is int and type(b) is int and a > 0 and b > 0 else -1
                elif nd == 1:
                    (a,) = shape
                    dims = (a,)
                    numel = a if type(a) is int and a > 0 else -1
                else:
                    dims = tuple(shape)
                    numel = 1
                    for a in dims:
                        if type(a) is not int or a <= 0 or numel > U64_MAX:
                            numel = -1  # the field-by-field path says what is wrong
                            break
                        numel *= a
                # numel <= U64_MAX follows: numel * width spans at most U64_MAX bytes
                if (
                    numel > 0
                    and type(begin) is int
                    and type(end) is int
                    and begin >= 0
                    and numel * width == end - begin <= U64_MAX
                ):
                    pos = end if begin == pos else -1
                    tensors[name] = new(TI, (name, dtype, dims, base + begin, base + end, file))
                    continue
        slow += 1
        strings += _strings_in(e)
        pos = -1
        _read_entry(name, e, h, diag)
    return strings + 4 * (len(doc) - slow), pos  # fast: three field names and the dtype


def _read_entry(name: str, e: Any, h: Header, diag: Any) -> None:
    """Validate one entry field by field: a tensor, or diagnostics saying what is wrong."""
    if type(e) is not dict or len(e) != 3 or e.keys() != ENTRY_KEYS:
        if type(e) is dict and e.keys() > ENTRY_KEYS:
            _extra_fields(name, e, diag)  # readers ignore unknown fields: validate the rest
        else:
            _malformed_entry(name, e, diag)
            h.rejected += 1
            return
    dtype, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
    bits = BITS.get(dtype) if type(dtype) is str else None
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
        h.rejected += 1
        _bad_fields(name, dtype, bits, shape, shape_ok, offs, offs_ok, diag)
        return
    total_bits = numel * bits
    if overflow or total_bits > U64_MAX * 8:
        size = "has more elements than" if overflow else f"is {total_bits // 8:,} bytes, more than"
        diag(
            R.QC112,
            f"shape {json.dumps(shape)[:80]} of {dtype} {size} 64 bits can count",
            tensor=name,
            pointer=json_pointer(name, "shape"),
        )
        h.rejected += 1
        return
    if total_bits & 7:
        diag(
            R.QC113,
            f"{numel} elements of {dtype} are {total_bits} bits, not a whole number of bytes",
            tensor=name,
            pointer=json_pointer(name, "shape"),
        )
        h.rejected += 1
        return
    if total_bits >> 3 != end - begin:
        diag(
            R.QC114,
            f"{dtype} {shape} needs {total_bits // 8:,} bytes but data_offsets "
            f"span {end - begin:,}",
            tensor=name,
            pointer=json_pointer(name, "data_offsets"),
        )
        h.rejected += 1
        return
    if bits < 8 and shape and (shape[-1] * bits) & 7:
        diag(
            R.QC119,
            f"rows of {shape[-1]} {dtype} elements are {shape[-1] * bits} bits; "
            "rows do not start on byte boundaries",
            tensor=name,
            pointer=json_pointer(name, "shape"),
        )
    base = h.data_start
    h.tensors[name] = TensorInfo(name, dtype, tuple(shape), base + begin, base + end, h.file)


def _extra_fields(name: str, e: dict[str, Any], diag: Any) -> None:
    extra = sorted(e.keys() - ENTRY_KEYS)
    diag(
        R.QC121,
        f"entry has unexpected field{'s' if len(extra) > 1 else ''} "
        f"{', '.join(extra)}; readers ignore them",
        tensor=name,
        pointer=json_pointer(name),
        severity=Severity.WARNING,
        effects=unaffected(),
    )


def _malformed_entry(name: str, e: Any, diag: Any) -> None:
    if type(e) is not dict:
        what = f"is {_json_kind(e)}"
    else:
        missing = sorted(ENTRY_KEYS - e.keys())
        extra = sorted(e.keys() - ENTRY_KEYS)
        what = "; ".join(
            x
            for x in (
                f"lacks {', '.join(missing)}" if missing else "",
                f"has unexpected {', '.join(extra)}" if extra else "",
            )
            if x
        )
    diag(
        R.QC121,
        f"entry {what}; it must be an object with dtype, shape and data_offsets",
        tensor=name,
        pointer=json_pointer(name),
    )


def _bad_fields(
    name: str,
    dtype: Any,
    bits: int | None,
    shape: Any,
    shape_ok: bool,
    offs: Any,
    offs_ok: bool,
    diag: Any,
) -> None:
    if bits is None:
        diag(
            R.QC109,
            f"dtype {json.dumps(dtype)[:80]} is not a safetensors dtype",
            tensor=name,
            pointer=json_pointer(name, "dtype"),
        )
    if not shape_ok:
        diag(
            R.QC110,
            f"shape {json.dumps(shape)[:80]} is not a list of non-negative integers",
            tensor=name,
            pointer=json_pointer(name, "shape"),
        )
    if not offs_ok:
        diag(
            R.QC111,
            f"data_offsets {json.dumps(offs)[:80]} is not [begin, end] with 0 <= begin <= end",
            tensor=name,
            pointer=json_pointer(name, "data_offsets"),
        )


def _check_layout(h: Header, diag: Any, tiled: int = -1) -> None:
    """Offsets tile the data section exactly: no gaps, no overlaps, nothing missing or extra.

    `tiled` >= 0: the entries, in header order, already tile `[0, tiled)` of the data (no gap,
    no overlap), so only the end is left to compare with the file size."""
    expected = h.data_start
    prev = None
    if tiled >= 0:
        expected += tiled
    for name, _, _, begin, end, _ in (
        () if tiled >= 0 else sorted(h.tensors.values(), key=_BY_OFFSETS)
    ):
        if begin > expected and not h.rejected:
            diag(
                R.QC115,
                f"{begin - expected:,} unused bytes before this tensor (after {prev!r})"
                if prev
                else f"{begin - expected:,} unused bytes before the first tensor",
                tensor=name,
                pointer=json_pointer(name, "data_offsets"),
            )
        elif begin < expected:
            diag(
                R.QC116,
                f"bytes [{begin - h.data_start}, {min(end, expected) - h.data_start}) "
                f"are shared with {prev!r}",
                tensor=name,
                pointer=json_pointer(name, "data_offsets"),
            )
        if end >= expected:
            expected = end
            prev = name
    if expected > h.file_size:
        diag(
            R.QC117,
            f"truncated: expected {expected:,} bytes, found {h.file_size:,} — re-download "
            f"the file (the header declares {expected - h.data_start:,} bytes of tensor data, "
            f"the file holds {max(h.file_size - h.data_start, 0):,})",
        )
    elif expected < h.file_size and not h.rejected:  # rejected entries own bytes too
        extra = h.file_size - expected
        diag(
            R.QC118,
            f"{extra:,} byte{'s' if extra != 1 else ''} after the last tensor "
            f"{'are' if extra != 1 else 'is'} not covered by any tensor",
        )
