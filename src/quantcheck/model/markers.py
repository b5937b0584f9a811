"""Decode `<layer>.comfy_quant` marker tensors and `_quantization_metadata` header markers.

Markers are decoded the way both runtimes do (`json.loads` on the raw bytes / the header string),
then checked for the product's own rules. Only marker bytes are read, in one batched call.
"""

from __future__ import annotations

import json

from quantcheck._record import factory, record
from quantcheck.diagnostics import Diagnostic, json_pointer
from quantcheck.io.header import Header, TensorInfo
from quantcheck.io.json_depth import MAX_DEPTH, too_deep
from quantcheck.io.source import ByteSource, base_name
from quantcheck.rules import codes as R

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from typing import Any

    #: (value, error code, detail, good): `decode_marker_bytes`, and whether the value is a
    #: marker object read without any finding (an object, no byte-order mark, not UTF-16/32).
    _Verdict = tuple[Any, str | None, str | None, bool]

MARKER_SUFFIX = ".comfy_quant"
MAX_MARKER_BYTES = 64 * 1024
#: marker dtypes numpy cannot hold: `tensor.numpy()` fails before any byte is read.
UNREADABLE_MARKER_DTYPES = frozenset(
    {
        "BF16",
        "F8_E4M3",
        "F8_E5M2",
        "F8_E8M0",
        "F8_E4M3FNUZ",
        "F8_E5M2FNUZ",
        "F4",
        "F6_E2M3",
        "F6_E3M2",
    }
)
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


@record
class MarkerSource:
    """One marker object as found in one place (a tensor or a header entry of one file)."""

    origin: str  # "tensor" or "header"
    file: str
    fields: dict[str, Any]
    key: str  # tensor name, or the header `layers` key


@record
class Marker:
    """All marker sources for one layer prefix, merged field by field (later sources win)."""

    prefix: str
    sources: list[MarkerSource] = factory(list)
    fields: dict[str, Any] = factory(dict)

    @property
    def format(self) -> Any:
        return self.fields.get("format")

    def get(self, key: str, default: Any = None) -> Any:
        """A marker key, looked up like ComfyUI does: top level, then `params`."""
        if key in self.fields:
            return self.fields[key]
        params = self.fields.get("params")
        if isinstance(params, dict) and key in params:
            return params[key]
        return default


#: Decoded marker bytes shared across checkpoints while `shared_decode_cache` is on.
_SHARED: dict[bytes, _Verdict] | None = None
SHARED_MAX = 4096  # distinct marker byte strings kept; the cache starts over when full
SHARED_BYTES = 4096  # longer markers are decoded per file (the cache stays under 16 MiB)


def shared_decode_cache(on: bool) -> None:
    """Decode each distinct marker byte string once across checkpoints (on), or per file."""
    global _SHARED
    _SHARED = {} if on else None
    _last_scan.clear()


def decode_marker_bytes(raw: bytes) -> tuple[Any, str | None, str | None]:
    """Decode marker bytes like the runtimes: (value, error code, detail)."""
    if not raw:
        return None, R.QC201.code, "the marker tensor is empty"
    if not raw.strip(b"\x00"):
        return None, R.QC203.code, f"all {len(raw)} marker bytes are zero"
    try:
        value = json.loads(raw)
    except RecursionError:
        return None, R.QC201.code, "marker JSON is nested too deeply"
    except UnicodeDecodeError as exc:
        return None, R.QC201.code, f"marker byte {exc.start} is not valid text ({exc.reason})"
    except ValueError as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        pos = f" at byte {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        return None, R.QC201.code, f"marker is not valid JSON{pos}: {detail}"
    deep = too_deep(value)
    if deep:
        return None, R.QC201.code, f"marker {deep}; quantcheck does not read it"
    return value, None, None


def _preview(raw: bytes) -> str:
    text = raw[:40].decode("utf-8", "replace")
    return repr(text) + ("…" if len(raw) > 40 else "")


def read_tensor_markers(
    source: ByteSource, header: Header
) -> tuple[list[MarkerSource], list[Diagnostic]]:
    """Read and decode every `.comfy_quant` tensor of one file."""
    diags: list[Diagnostic] = []
    file = header.file
    size = header.file_size
    wanted: list[TensorInfo] = []
    ranges: list[tuple[int, int]] = []
    for t in _marker_entries(header.tensors):
        if (t[1] == "U8" and t[4] <= size and t[4] - t[3] <= MAX_MARKER_BYTES) or _readable(
            t, file, size, diags
        ):  # the common case in one test; `_readable` reports what is unusual
            wanted.append(t)
            ranges.append((t[3], t[4] - t[3]))
    datas = source.read_many(ranges) if wanted else []
    out: list[MarkerSource] = []
    verdicts: dict[bytes, _Verdict] = {}  # most markers of a file repeat
    shared = _SHARED
    for t, raw in zip(wanted, datas, strict=True):
        hit = verdicts.get(raw)
        if hit is None:
            hit = verdicts[raw] = _verdict(raw, shared)
        if hit[3]:  # a good marker object: the common case
            out.append(MarkerSource("tensor", file, hit[0], t[0]))
            continue
        diag = _marker_problem(hit, raw, file, t[0])
        if diag is not None:
            diags.append(diag)
        if hit[1] is None and isinstance(hit[0], dict):  # QC207 only: the marker is still used
            out.append(MarkerSource("tensor", file, hit[0], t[0]))
    return out, diags


#: Longer name lists are always searched name by name (the remembered list stays small).
SCAN_MAX_NAMES = 4096
#: The last name list searched and the positions of its marker tensors (the checkpoints of
#: one folder usually share their names).
_last_scan: list[tuple[tuple[str, ...], tuple[int, ...]]] = []


def _marker_entries(tensors: dict[str, TensorInfo]) -> list[TensorInfo]:
    """The `.comfy_quant` entries of `tensors`, in order; for the same names as the previous
    call while many checkpoints are checked (`shared_decode_cache`), taken by their positions
    then (no name is searched again)."""
    if _SHARED is None or len(tensors) > SCAN_MAX_NAMES:
        return [t for name, t in tensors.items() if name.endswith(MARKER_SUFFIX)]
    names = tuple(tensors)
    last = _last_scan[0] if _last_scan else None  # one read: other threads may replace it
    if last is None or last[0] != names:
        last = (names, tuple(i for i, n in enumerate(names) if n.endswith(MARKER_SUFFIX)))
        _last_scan[:] = [last]
    entries = list(tensors.values())
    return [entries[i] for i in last[1]]


def _readable(t: TensorInfo, file: str, size: int, diags: list[Diagnostic]) -> bool:
    """Whether a marker tensor that is not a small in-file U8 is still read; the reasons it is
    not (or is unusual) are added to `diags`."""
    if t.dtype in UNREADABLE_MARKER_DTYPES:
        diags.append(
            Diagnostic(
                R.QC204,
                f"marker is stored as {t.dtype}; neither runtime can read its bytes "
                "(markers are U8)",
                file=file,
                tensor=t.name,
                layer=t.name[: -len(MARKER_SUFFIX)],
                pointer=json_pointer(t.name, "dtype"),
            )
        )
        return False
    if t.nbytes > MAX_MARKER_BYTES:
        diags.append(
            Diagnostic(
                R.QC206,
                f"marker is {t.nbytes:,} bytes, over the {MAX_MARKER_BYTES:,}-byte "
                "limit; it was not read",
                file=file,
                tensor=t.name,
                layer=t.name[: -len(MARKER_SUFFIX)],
            )
        )
        return False
    if t.dtype != "U8":
        diags.append(
            Diagnostic(
                R.QC205,
                f"marker is stored as {t.dtype}; runtimes read its raw bytes, but markers are U8",
                file=file,
                tensor=t.name,
                layer=t.name[: -len(MARKER_SUFFIX)],
                pointer=json_pointer(t.name, "dtype"),
            )
        )
    return t.end <= size  # a truncated file is already reported by the header reader


def _verdict(raw: bytes, shared: dict[bytes, _Verdict] | None) -> _Verdict:
    """The verdict on marker bytes `raw`: from the shared cache, or decoded (and kept there)."""
    hit = shared.get(raw) if shared is not None else None
    if hit is None:
        value, code, detail = decode_marker_bytes(raw)
        good = code is None and isinstance(value, dict) and not _odd_encoding(raw)
        hit = (value, code, detail, good)
        if shared is not None and len(raw) <= SHARED_BYTES:
            if len(shared) >= SHARED_MAX:
                shared.clear()
            shared[raw] = hit
    return hit


def _odd_encoding(raw: bytes) -> bool:
    """A byte-order mark, or UTF-16/32 text (a zero byte among the first four)."""
    return raw.startswith(BOMS) or b"\x00" in raw[:4]


def _marker_problem(hit: _Verdict, raw: bytes, file: str, name: str) -> Diagnostic | None:
    """The finding on marker tensor `name` whose bytes `raw` got the verdict `hit` (not good)."""
    value, code, detail, _ = hit
    prefix = name[: -len(MARKER_SUFFIX)]
    if code is not None:
        return Diagnostic(
            code,
            f"{detail}: {_preview(raw)}" if raw else str(detail),
            file=file,
            tensor=name,
            layer=prefix,
        )
    if not isinstance(value, dict):
        return Diagnostic(
            R.QC202,
            f"marker decodes to {type(value).__name__} {_preview(raw)}; it must be a JSON object",
            file=file,
            tensor=name,
            layer=prefix,
        )
    if _odd_encoding(raw):
        return Diagnostic(
            R.QC207,
            "marker text has a byte-order mark or is UTF-16/32; runtimes accept it "
            "but other tools may not",
            file=file,
            tensor=name,
            layer=prefix,
        )
    return None


def read_header_markers(header: Header) -> tuple[list[MarkerSource], list[Diagnostic]]:
    """Decode `__metadata__["_quantization_metadata"]` of one file, like both runtimes."""
    diags: list[Diagnostic] = []
    text = header.metadata.get("_quantization_metadata")
    if text is None:
        return [], diags
    file = header.file
    ptr = json_pointer("__metadata__", "_quantization_metadata")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        diags.append(
            Diagnostic(
                R.QC208,
                f"_quantization_metadata is not valid JSON: {detail}",
                file=file,
                pointer=ptr,
            )
        )
        return [], diags
    deep = too_deep(doc, MAX_DEPTH + 2)  # the document, its layers object, then the markers
    if deep:
        diags.append(
            Diagnostic(
                R.QC208,
                f"_quantization_metadata {deep}; quantcheck does not read it",
                file=file,
                pointer=ptr,
            )
        )
        return [], diags
    if not isinstance(doc, dict):
        diags.append(
            Diagnostic(
                R.QC208,
                f"_quantization_metadata is {type(doc).__name__}; it "
                "must be an object with a layers object",
                file=file,
                pointer=ptr,
            )
        )
        return [], diags
    layers = doc.get("layers")
    if not isinstance(layers, dict):
        what = "missing" if layers is None and "layers" not in doc else type(layers).__name__
        diags.append(
            Diagnostic(
                R.QC208,
                f"_quantization_metadata has no layers object (layers is {what})",
                file=file,
                pointer=ptr,
            )
        )
        return [], diags
    out: list[MarkerSource] = []
    for key, value in layers.items():
        if not isinstance(value, dict):
            diags.append(
                Diagnostic(
                    R.QC209,
                    f"header marker for {key!r} is {type(value).__name__}; it must be an object",
                    file=file,
                    layer=key,
                    pointer=ptr,
                )
            )
            continue
        out.append(MarkerSource("header", file, value, key))
    return out, diags


def _strict_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: `true` differs from `1`, and `16` from `16.0`. Iterative: the
    depth of the values never reaches Python's recursion limit."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def merge_markers(sources: list[MarkerSource]) -> tuple[dict[str, Marker], list[Diagnostic]]:
    """Merge marker sources per prefix in the order given (header before tensor, file order)."""
    markers: dict[str, Marker] = {}
    diags: list[Diagnostic] = []
    cut = -len(MARKER_SUFFIX)
    for src in sources:
        prefix = src.key[:cut] if src.origin == "tensor" else src.key
        m = markers.get(prefix)
        if m is None:  # the first source of a prefix: nothing to compare with
            markers[prefix] = Marker(prefix, [src], dict(src.fields))
            continue
        for k, v in src.fields.items():
            if k in m.fields and m.fields[k] != v:
                diags.append(
                    Diagnostic(
                        R.QC210,
                        f"field {k!r} is {json.dumps(m.fields[k])} in "
                        f"{_where(m.sources, k)} but {json.dumps(v)} in {_label(src)}",
                        file=src.file,
                        layer=prefix,
                        tensor=src.key if src.origin == "tensor" else None,
                        data={"field": k},
                    )
                )
            elif k in m.fields and not _strict_equal(m.fields[k], v):
                diags.append(
                    Diagnostic(
                        R.QC211,
                        f"field {k!r} is {json.dumps(m.fields[k])} in "
                        f"{_where(m.sources, k)} and {json.dumps(v)} in {_label(src)}: "
                        "equal in Python, but some runtimes check the exact type",
                        file=src.file,
                        layer=prefix,
                        data={"field": k},
                    )
                )
        m.fields.update(src.fields)
        m.sources.append(src)
    return markers, diags


def _label(src: MarkerSource) -> str:
    where = "the _quantization_metadata header" if src.origin == "header" else "the marker tensor"
    return f"{where} of {base_name(src.file)}"


def _where(sources: list[MarkerSource], key: str) -> str:
    for src in reversed(sources):
        if key in src.fields:
            return _label(src)
    return "an earlier source"
