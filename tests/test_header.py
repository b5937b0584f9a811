"""The header reader: every container problem is a diagnostic with a stable code (QC101-QC122).

Each hostile file is built byte by byte (tests/hostile.py). For each one the test asserts the
exact set of codes, that the message says what was found, and cross-checks the verdict with the
real `safetensors` package (test-only dependency).
"""

from __future__ import annotations

import json
import struct
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import pytest

from hostile import BITS, entry, nbytes, raw, tensors
from quantcheck.diagnostics import Severity
from quantcheck.io.header import MAX_HEADER, Header, read_header
from quantcheck.io.source import LocalFile, MemorySource

E40 = 2**40
ONE = entry("U8", [1], 0)  # a 1-byte U8 tensor at offset 0


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    codes: frozenset[str]  # exactly the codes read_header must report
    says: tuple[str, ...]  # substrings of the messages (what was found)
    st_refuses: bool  # safetensors 0.8.0 refuses to open the file


def case(id: str, data: bytes, codes: str, *says: str, st: bool = True) -> Case:
    return Case(id, data, frozenset(codes.split()), says, st)


def dup(body: str) -> bytes:
    """A header given as literal JSON text (so keys can repeat), padded, with 1 data byte."""
    return raw(body, b"\0", pad=True)


CASES = [
    # QC101: shorter than the 8-byte length field
    case("empty-file", b"", "QC101", "file is 0 bytes"),
    case("3-byte-file", b"\x01\x02\x03", "QC101", "file is 3 bytes"),
    case("7-byte-file", b"\x02\0\0\0\0\0\0", "QC101", "file is 7 bytes"),
    # QC102: header length over 100,000,000 bytes
    case(
        "header-len-2^63",
        raw(b"{}", length=2**63),
        "QC102",
        "9,223,372,036,854,775,808 bytes",
        "100,000,000",
    ),
    case(
        "header-len-u64-max",
        raw(b"{}", length=2**64 - 1),
        "QC102",
        "18,446,744,073,709,551,615 bytes",
    ),
    case("header-len-limit+1", raw(b"{}", length=MAX_HEADER + 1), "QC102", "100,000,001 bytes"),
    # QC103: header past end of file
    case(
        "header-past-eof",
        raw(b"{}", length=1000),
        "QC103",
        "header length is 1,000 bytes",
        "only 2 bytes",
    ),
    case("header-len-just-past", raw(b"{}  ", length=5), "QC103", "only 4 bytes"),
    # QC104: not UTF-8
    case(
        "latin1-name",
        raw(b'{"caf\xe9.weight":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0", pad=True),
        "QC104",
        "header byte 5 is not valid UTF-8",
    ),
    case("lone-continuation", raw(b"\x80{}     "), "QC104", "header byte 0"),
    # QC105: not JSON
    case(
        "nul-padding",
        raw(json.dumps({"a": ONE}).encode() + b"\0\0", b"\0"),
        "QC105",
        "not valid JSON",
        "Extra data",
    ),
    case("utf8-bom", raw(b"\xef\xbb\xbf" + json.dumps({"a": ONE}).encode(), b"\0"), "QC105", "BOM"),
    case("truncated-json", raw(b'{"a": {"dtype": "U8"', pad=True), "QC105", "not valid JSON"),
    case("zero-length-header", raw(b""), "QC105", "not valid JSON"),
    case("single-quotes", raw("{'a': 1}", pad=True), "QC105", "not valid JSON"),
    case("5000-digit-int", raw('{"a":' + "1" * 5000 + "}", pad=True), "QC105", "4300 digits"),
    case(
        "lone-surrogate-name",
        dup('{"\\ud800.w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
        "QC105",
        "lone UTF-16 surrogate",
    ),
    case(
        "lone-surrogate-meta",
        raw('{"__metadata__":{"k":"\\udc00"}}', pad=True),
        "QC105",
        "lone UTF-16 surrogate",
    ),
    # QC106: not an object
    case("array", raw(b'["a.weight"]', pad=True), "QC106", "header JSON is an array"),
    case("string", raw(b'"a"', pad=True), "QC106", "is a string"),
    case("number", raw(b"12345678"), "QC106", "is a number"),
    case("null", raw(b"null", pad=True), "QC106", "is null"),
    # QC107: duplicate keys (safetensors keeps the last top-level tensor, but refuses a repeated
    # field inside an entry and a repeated __metadata__: serde rejects duplicate struct fields)
    case(
        "dup-tensor",
        dup(
            '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "key 'a' appears more than once",
        st=False,
    ),
    case(
        "dup-field",
        dup('{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
        "QC107",
        "key 'dtype' appears more than once",
    ),
    # a repeated field next to one spelled with an escape ("d\u0074ype" is "dtype")
    case(
        "dup-field-escaped",
        dup(
            '{"a":{"dtype":"U8","dtype":"U8","shape":[1],'
            '"data_offsets":[0,1]},"b":{"d\\u0074ype":"U8","shape":[0],'
            '"data_offsets":[1,1]}}'
        ),
        "QC107",
        "key 'dtype'",
    ),
    case(
        "dup-metadata",
        dup(
            '{"__metadata__":{"k":"1"},"__metadata__":{"k":"2"},'
            '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "key '__metadata__'",
    ),
    case(
        "dup-metadata-key",
        dup(
            '{"__metadata__":{"k":"1","k":"2"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "key 'k' appears more than once",
        st=False,
    ),
    # a repeated tensor whose first value holds no string: only the count of keys tells
    case(
        "dup-tensor-first-a-number",
        dup('{"a":5,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
        "QC107",
        "key 'a' appears more than once",
    ),
    # the same key spelled two ways ("a\/b" is "a/b"), names with escaped quotes and
    # backslashes: repeats are still found
    case(
        "dup-metadata-key-escaped-slash",
        dup(
            '{"__metadata__":{"a/b":"1","a\\/b":"2"},'
            '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "key 'a/b' appears more than once",
        st=False,
    ),
    case(
        "dup-tensor-escaped-quote",
        dup(
            '{"x\\"y":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"x\\"y":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "appears more than once",
        st=False,
    ),
    case(
        "dup-tensor-escaped-backslash",
        dup(
            '{"x\\\\":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"x\\\\":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
        ),
        "QC107",
        "appears more than once",
        st=False,
    ),
    # QC108: __metadata__ not a string -> string map
    case(
        "meta-int-value",
        raw({"__metadata__": {"step": 1000}, "a": ONE}, b"\0", pad=True),
        "QC108",
        "__metadata__['step'] is a number",
    ),
    case(
        "meta-nested",
        raw({"__metadata__": {"cfg": {"x": "y"}}, "a": ONE}, b"\0", pad=True),
        "QC108",
        "__metadata__['cfg']",
    ),
    case(
        "meta-array",
        raw({"__metadata__": ["k"], "a": ONE}, b"\0", pad=True),
        "QC108",
        "__metadata__ is an array",
    ),
    case(
        "meta-string",
        raw({"__metadata__": "k", "a": ONE}, b"\0", pad=True),
        "QC108",
        "__metadata__ is a string",
    ),
    # QC109: unknown dtype (a rejected entry owns its bytes: no QC115/QC118 guesses)
    case(
        "dtype-FP8",
        raw({"a": entry("FP8", [1], 0, 1)}, b"\0", pad=True),
        "QC109",
        'dtype "FP8" is not a safetensors dtype',
    ),
    case(
        "dtype-lowercase",
        raw({"a": entry("f32", [1], 0, 4)}, bytes(4), pad=True),
        "QC109",
        'dtype "f32"',
    ),
    case(
        "dtype-number", raw({"a": entry(5, [1], 0, 1)}, b"\0", pad=True), "QC109", "dtype 5 is not"
    ),
    case(
        "dtype-F8_E4M3FN",
        raw({"a": entry("F8_E4M3FN", [1], 0, 1)}, b"\0", pad=True),
        "QC109",
        '"F8_E4M3FN"',
    ),
    # QC110: bad shape
    case(
        "shape-negative",
        raw({"a": entry("U8", [-1], 0, 0)}, pad=True),
        "QC110",
        "shape [-1] is not a list of non-negative integers",
    ),
    case(
        "shape-float", raw({"a": entry("U8", [1.0], 0, 1)}, b"\0", pad=True), "QC110", "shape [1.0]"
    ),
    case(
        "shape-bool",
        raw({"a": entry("U8", [True], 0, 1)}, b"\0", pad=True),
        "QC110",
        "shape [true]",
    ),
    case(
        "shape-string", raw({"a": entry("U8", "4", 0, 4)}, bytes(4), pad=True), "QC110", 'shape "4"'
    ),
    case("shape-null", raw({"a": entry("U8", None, 0, 0)}, pad=True), "QC110", "shape null"),
    case(
        "shape-nested",
        raw({"a": entry("U8", [[1]], 0, 1)}, b"\0", pad=True),
        "QC110",
        "shape [[1]]",
    ),
    # QC111: bad data_offsets
    case(
        "offsets-reversed",
        raw({"a": entry("U8", [1], 100, 50)}, pad=True),
        "QC111",
        "data_offsets [100, 50]",
        "begin <= end",
    ),
    case(
        "offsets-negative",
        raw({"a": entry("U8", [1], -1, 0)}, pad=True),
        "QC111",
        "data_offsets [-1, 0]",
    ),
    case(
        "offsets-float",
        raw({"a": entry("U8", [1], 0.0, 1)}, b"\0", pad=True),
        "QC111",
        "data_offsets [0.0, 1]",
    ),
    case(
        "offsets-three",
        raw({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2]}}, b"\0", pad=True),
        "QC111",
        "[0, 1, 2]",
    ),
    # QC112: element count x bits overflows 64 bits
    case(
        "shape-2^40x2^40",
        raw({"a": entry("F32", [E40, E40], 0, 0)}, pad=True),
        "QC112",
        "shape [1099511627776, 1099511627776] of F32 has more elements than 64 bits",
    ),
    case(
        "overflow-then-zero",
        raw({"a": entry("U8", [E40, E40, 0], 0, 0)}, pad=True),
        "QC112",
        "has more elements than 64 bits",
    ),
    case(
        "dim-2^64",
        raw({"a": entry("U8", [2**64], 0, 0)}, pad=True),
        "QC112",
        "[18446744073709551616]",
    ),
    case(
        "bytes-2^65",
        raw({"a": entry("F64", [2**62], 0, 0)}, pad=True),
        "QC112",
        "is 36,893,488,147,419,103,232 bytes, more than 64 bits",
    ),
    # 400 dims of 2^62: the product has ~7500 decimal digits (once crashed the message with
    # Python's 4300-digit int->str limit)
    case(
        "400-huge-dims",
        raw({"a": entry("U8", [2**62] * 400, 0, 0)}, pad=True),
        "QC112",
        "of U8 has more elements",
    ),
    # QC113: not a whole number of bytes
    case(
        "F4-odd-count",
        raw({"a": entry("F4", [3], 0, 2)}, b"\0\0", pad=True),
        "QC113",
        "3 elements of F4 are 12 bits",
    ),
    case(
        "F6-one",
        raw({"a": entry("F6_E2M3", [1], 0, 1)}, b"\0", pad=True),
        "QC113",
        "1 elements of F6_E2M3 are 6 bits",
    ),
    # QC114: offsets span differs from dtype x shape
    case(
        "span-too-short",
        raw({"a": entry("F32", [4], 0, 8)}, bytes(8), pad=True),
        "QC114",
        "F32 [4] needs 16 bytes but data_offsets span 8",
    ),
    case(
        "span-too-long",
        raw({"a": entry("U8", [2], 0, 4)}, bytes(4), pad=True),
        "QC114",
        "needs 2 bytes but data_offsets span 4",
    ),
    # QC115: gap; QC116: overlap
    case(
        "gap-first",
        raw({"a": entry("U8", [4], 4)}, bytes(8), pad=True),
        "QC115",
        "4 unused bytes before the first tensor",
    ),
    case(
        "gap-between",
        raw({"a": entry("U8", [4], 0), "b": entry("U8", [4], 8)}, bytes(12), pad=True),
        "QC115",
        "4 unused bytes before this tensor (after 'a')",
    ),
    case(
        "overlap",
        raw({"a": entry("U8", [8], 0), "b": entry("U8", [8], 4)}, bytes(12), pad=True),
        "QC116",
        "bytes [4, 8) are shared with 'a'",
    ),
    case(
        "same-range",
        raw({"a": entry("U8", [8], 0), "b": entry("U8", [8], 0)}, bytes(8), pad=True),
        "QC116",
        "shared with",
    ),
    case(
        "empty-inside",
        raw({"a": entry("U8", [8], 0), "z": entry("U8", [0], 4, 4)}, bytes(8), pad=True),
        "QC116",
        "shared with 'a'",
    ),
    # QC117: data shorter than declared; QC118: longer
    case(
        "data-truncated",
        raw({"a": entry("U8", [16], 0)}, bytes(8), pad=True),
        "QC117",
        "declares 16 bytes of tensor data, the file holds 8",
    ),
    case("data-missing", raw({"a": entry("U8", [16], 0)}, pad=True), "QC117", "the file holds 0"),
    case(
        "data-trailing",
        tensors([("a", "U8", [4])], trailing=b"junk"),
        "QC118",
        "4 bytes after the last tensor",
    ),
    case("no-tensors-trailing", raw(b"{}      ", b"\0"), "QC118", "1 byte after"),
    # QC119: sub-byte rows not byte-aligned (warning; safetensors opens it)
    case(
        "F4-rows-of-3",
        raw({"a": entry("F4", [2, 3], 0)}, bytes(3), pad=True),
        "QC119",
        "rows of 3 F4 elements are 12 bits",
        st=False,
    ),
    case(
        "F6-rows-of-1",
        raw({"a": entry("F6_E3M2", [4, 1], 0)}, bytes(3), pad=True),
        "QC119",
        "rows of 1 F6_E3M2 elements are 6 bits",
        st=False,
    ),
    # QC120: nesting too deep
    case("deep-array", raw("[" * 100_000 + "]" * 100_000), "QC120", "nested too deeply"),
    case(
        "deep-in-entry",
        raw('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", pad=True),
        "QC120",
        "nested too deeply",
    ),
    case(
        "deep-objects",
        raw('{"a":' * 100_000 + "1" + "}" * 100_000, pad=True),
        "QC120",
        "nested too deeply",
    ),
    # QC121: malformed entry (safetensors ignores unknown fields: see KNOWN_DIFFERENCES)
    case(
        "entry-missing-offsets",
        raw({"a": {"dtype": "U8", "shape": [1]}}, pad=True),
        "QC121",
        "entry lacks data_offsets",
    ),
    case("entry-string", raw({"a": "F32"}, pad=True), "QC121", "entry is a string"),
    case("entry-array", raw({"a": []}, pad=True), "QC121", "entry is an array"),
    case(
        "entry-extra-field",
        raw({"a": {**ONE, "offset": 0}}, b"\0", pad=True),
        "QC121",
        "entry has unexpected field offset",
        st=False,
    ),
    # QC122: header length not a multiple of 8 (info; safetensors opens it)
    case(
        "unpadded-header",
        raw({"a": ONE}, b"\0"),
        "QC122",
        "header length 53 is not a multiple of 8",
        st=False,
    ),
]

#: Error-severity codes on which we deliberately differ from safetensors 0.8.0. Apart from
#: these, safetensors refuses a file exactly when we report an error-severity QC1xx code.
KNOWN_DIFFERENCES = {
    "dup-tensor": "QC107: safetensors keeps the last duplicate tensor silently; we flag it "
    "because two tools may read different tensors",
    "dup-metadata-key": "QC107: a repeated __metadata__ key is kept-last by safetensors' map",
    "dup-metadata-key-escaped-slash": "QC107: the same, the key spelled two ways",
    "dup-tensor-escaped-quote": "QC107: as dup-tensor, a name with an escaped quote",
    "dup-tensor-escaped-backslash": "QC107: as dup-tensor, a name with an escaped backslash",
}


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_hostile_header_diagnostics(c: Case) -> None:
    h = read_header(MemorySource(c.data, name="hostile.safetensors"))
    found = {d.code for d in h.diagnostics}
    assert found == c.codes, [(d.code, d.message) for d in h.diagnostics]
    text = "\n".join(d.message for d in h.diagnostics)
    for s in c.says:
        assert s in text
    assert all(d.file == "hostile.safetensors" for d in h.diagnostics)


def test_every_container_code_has_a_failing_case() -> None:
    covered = set().union(*(c.codes for c in CASES))
    assert covered >= {f"QC{n}" for n in range(101, 123)}


def _st_refuses(path: Path) -> bool:
    safetensors = pytest.importorskip("safetensors")
    try:
        with safetensors.safe_open(str(path), "numpy") as f:
            list(f.keys())
    except Exception:  # SafetensorError, or OSError for files under 8 bytes
        return True
    return False


def _errors(data: bytes) -> set[str]:
    h = read_header(MemorySource(data))
    return {d.code for d in h.diagnostics if d.effective_severity is Severity.ERROR}


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_safetensors_cross_check(c: Case, tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(c.data)
    assert _st_refuses(path) == c.st_refuses
    ours = bool(_errors(c.data))
    if c.id in KNOWN_DIFFERENCES:
        assert ours and not c.st_refuses
    else:
        assert ours == c.st_refuses


def test_known_differences_are_real_cases() -> None:
    assert set(KNOWN_DIFFERENCES) <= {c.id for c in CASES}


# --------------------------------------------------------------------------- valid headers


@pytest.mark.parametrize("dtype", sorted(BITS))
def test_every_safetensors_dtype_is_known(dtype: str, tmp_path: Path) -> None:
    data = tensors([("t", dtype, [2, 4])], {"format": "pt"})
    h = read_header(MemorySource(data))
    assert h.diagnostics == []
    t = h.tensors["t"]
    assert (t.dtype, t.shape, t.nbytes) == (dtype, (2, 4), BITS[dtype])
    path = tmp_path / "t.safetensors"
    path.write_bytes(data)
    assert not _st_refuses(path)


def test_valid_header_offsets_are_absolute() -> None:
    data = tensors(
        [
            ("a.weight", "F32", [2, 3]),
            ("a.bias", "BF16", []),
            ("empty", "U8", [0, 5]),
            ("packed", "F4", [2, 4]),
        ],
        {"format": "pt", "quant_format": "nvfp4"},
    )
    h = read_header(MemorySource(data, name="m.safetensors"))
    assert h.diagnostics == []
    assert h.usable
    n = struct.unpack("<Q", data[:8])[0]
    assert h.header_len == n and h.data_start == 8 + n and n % 8 == 0
    assert h.file_size == len(data)
    assert list(h.tensors) == ["a.weight", "a.bias", "empty", "packed"]
    w, b, e, p = h.tensors.values()
    assert (w.begin, w.end, w.numel) == (8 + n, 8 + n + 24, 6)
    assert (b.shape, b.begin, b.nbytes, b.numel) == ((), 8 + n + 24, 2, 1)
    assert (e.nbytes, e.numel) == (0, 0)
    assert (p.nbytes, p.end) == (4, len(data))
    assert w.file == "m.safetensors"
    assert h.metadata == {"format": "pt", "quant_format": "nvfp4"}


def test_whitespace_around_json_and_empty_header() -> None:
    h = read_header(MemorySource(raw(b"  {}  \n\t")))
    assert (h.usable, h.tensors, h.diagnostics) == (True, {}, [])
    h = read_header(MemorySource(raw({"__metadata__": {"a": "b"}}, pad=True)))
    assert (h.usable, h.tensors, h.metadata, h.diagnostics) == (True, {}, {"a": "b"}, [])


@pytest.mark.parametrize("name", ["\\ud83d\\ude00.w", "caf\\u00e9.w", "\\u0061"])
def test_escaped_names_are_fine(name: str, tmp_path: Path) -> None:
    body = '{"' + name + '":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    data = raw(body, b"\0", pad=True)
    h = read_header(MemorySource(data))
    assert h.diagnostics == [] and list(h.tensors) == [json.loads(f'"{name}"')]
    path = tmp_path / "e.safetensors"
    path.write_bytes(data)
    assert not _st_refuses(path)


def test_metadata_null_is_absent() -> None:
    h = read_header(MemorySource(raw({"__metadata__": None, "a": ONE}, b"\0", pad=True)))
    assert (h.diagnostics, h.metadata, list(h.tensors)) == ([], {}, ["a"])


def test_unparsable_header_is_not_usable() -> None:
    for data in (b"", raw(b"[]      "), raw(b"{", pad=True), raw(b"{}", length=2**63)):
        h = read_header(MemorySource(data))
        assert not h.usable and h.tensors == {}
        assert h.diagnostics


def test_good_metadata_kept_when_one_value_is_bad() -> None:
    h = read_header(
        MemorySource(raw({"__metadata__": {"ok": "1", "bad": 2}, "a": ONE}, b"\0", pad=True))
    )
    assert h.metadata == {"ok": "1"}
    [d] = h.diagnostics
    assert (d.code, d.pointer) == ("QC108", "/__metadata__/bad")


def test_pointers_and_tensor_names_escape_json_pointer_tokens() -> None:
    data = raw({"a/b~c": entry("U8", [-1], 0, 0), "x": entry("FP8", [1], 0, 0)}, pad=True)
    diags = {d.code: d for d in read_header(MemorySource(data)).diagnostics}
    assert diags["QC110"].tensor == "a/b~c"
    assert diags["QC110"].pointer == "/a~1b~0c/shape"
    assert diags["QC109"].pointer == "/x/dtype"


def test_duplicate_tensor_keeps_last_and_points_at_it() -> None:
    data = dup(
        '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
        '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    )
    h = read_header(MemorySource(data))
    [d] = h.diagnostics
    assert (d.code, d.tensor, d.pointer) == ("QC107", "a", "/a")
    assert h.tensors["a"].shape == (1,)


def test_severities_of_container_codes() -> None:
    sev = {
        c: read_header(MemorySource(d)).diagnostics
        for c, d in (
            ("QC119", raw({"a": entry("F4", [2, 3], 0)}, bytes(3), pad=True)),
            ("QC122", raw({"a": ONE}, b"\0")),
            ("QC117", raw({"a": entry("U8", [16], 0)}, pad=True)),
        )
    }
    assert [d.effective_severity for d in sev["QC119"]] == [Severity.WARNING]
    assert [d.effective_severity for d in sev["QC122"]] == [Severity.INFO]
    assert [d.effective_severity for d in sev["QC117"]] == [Severity.ERROR]


# --------------------------------------------------------------------------- sources, I/O


class DuckSource:
    """The minimal byte source: `name`, `size`, `read(offset, n)`; records every read."""

    def __init__(self, data: bytes, size: int | None = None) -> None:
        self._data = data
        self.name = "duck.safetensors"
        self.size = len(data) if size is None else size
        self.reads: list[tuple[int, int]] = []

    def read(self, offset: int, n: int) -> bytes:
        self.reads.append((offset, n))
        return self._data[offset : offset + n]


def test_any_byte_source_works_and_only_the_header_is_read() -> None:
    data = tensors([("w", "F32", [64, 64])])
    src = DuckSource(data)
    h = read_header(src)  # type: ignore[arg-type]
    assert h.diagnostics == [] and h.tensors["w"].nbytes == 64 * 64 * 4
    assert sum(n for _, n in src.reads) == h.data_start  # 8 + header, not a tensor byte


def test_prefetched_bytes_are_used() -> None:
    data = tensors([("w", "F32", [4])])
    src = DuckSource(data)
    h = read_header(src, prefetch=data[:200])  # type: ignore[arg-type]
    assert src.reads == [] and list(h.tensors) == ["w"] and h.diagnostics == []


def test_lying_length_field_reads_nothing_more() -> None:
    for n in (2**63, MAX_HEADER + 1, 50_000_000):
        src = DuckSource(raw(b"{}", length=n))
        h = read_header(src)  # type: ignore[arg-type]
        assert h.diagnostics and h.diagnostics[0].code in {"QC102", "QC103"}
        assert src.reads == [(0, 8)]


def test_short_read_is_an_io_error() -> None:
    data = tensors([("w", "U8", [4])])
    src = DuckSource(data[:20], size=len(data))  # claims more bytes than it can deliver
    with pytest.raises(OSError, match="short read"):
        read_header(src)  # type: ignore[arg-type]


def test_local_file(tmp_path: Path) -> None:
    path = tmp_path / "f.safetensors"
    path.write_bytes(tensors([("w", "BF16", [3, 5])], {"format": "pt"}))
    with LocalFile(path) as src:
        h = read_header(src)
    assert h.file == str(path) and h.tensors["w"].shape == (3, 5) and h.diagnostics == []
    (tmp_path / "empty.safetensors").write_bytes(b"")
    with LocalFile(tmp_path / "empty.safetensors") as src:
        assert [d.code for d in read_header(src).diagnostics] == ["QC101"]


def test_missing_file_raises_io_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        LocalFile(tmp_path / "nope.safetensors")
    with pytest.raises(IsADirectoryError):
        LocalFile(tmp_path)


# --------------------------------------------------------------------------- scale, memory


def _peak(fn) -> tuple[Header, int]:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        h = fn()
        return h, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_huge_declared_tensor_small_peak_memory() -> None:
    data = raw({"w": entry("F32", [E40, E40], 0, 0)}, pad=True)
    h, peak = _peak(lambda: read_header(MemorySource(data)))
    assert [d.code for d in h.diagnostics] == ["QC112"]
    assert peak < 2 * 2**20


def test_huge_header_length_small_peak_memory() -> None:
    data = raw(b"{}", length=2**63)
    h, peak = _peak(lambda: read_header(MemorySource(data)))
    assert [d.code for d in h.diagnostics] == ["QC102"]
    assert peak < 2 * 2**20


def test_4tib_file_is_read_from_its_header_alone() -> None:
    """A (virtual) 4 TiB file: the reader touches only the header, in little memory."""
    header = raw({"w": entry("F32", [2**20, 2**20], 0)}, pad=True)
    src = DuckSource(header, size=len(header) + 4 * 2**40)
    h, peak = _peak(lambda: read_header(src))  # type: ignore[arg-type]
    assert h.diagnostics == []
    assert h.tensors["w"].nbytes == 4 * 2**40
    assert sum(n for _, n in src.reads) == len(header)
    assert peak < 2 * 2**20


def test_100k_tensors() -> None:
    specs = [(f"blocks.{i}.w", "U8", [1]) for i in range(100_000)]
    data = tensors(specs)
    h = read_header(MemorySource(data))  # timed in benchmarks/bench_check.py --hostile
    assert h.diagnostics == [] and len(h.tensors) == 100_000
    assert h.tensors["blocks.99999.w"].end == len(data)


def test_100k_overlapping_tensors() -> None:
    data = raw({f"t{i}": entry("U8", [1], 0) for i in range(100_000)}, b"\0", pad=True)
    h = read_header(MemorySource(data))
    codes = [d.code for d in h.diagnostics]
    assert codes.count("QC116") == 99_999 and set(codes) == {"QC116"}


def test_100k_tensors_safetensors_agrees(tmp_path: Path) -> None:
    path = tmp_path / "many.safetensors"
    path.write_bytes(tensors([(f"t{i}", "U8", [1]) for i in range(100_000)]))
    assert not _st_refuses(path)
    path.write_bytes(raw({f"t{i}": entry("U8", [1], 0) for i in range(100_000)}, b"\0", pad=True))
    assert _st_refuses(path)


def test_many_huge_dims_are_fast() -> None:
    """100,000 dims of 2^62: the element count stops growing past 64 bits (no huge integers,
    no quadratic time; timed in benchmarks/bench_check.py --hostile)."""
    data = raw({"w": entry("U8", [2**62] * 100_000, 0, 0)}, pad=True)
    h = read_header(MemorySource(data))
    [d] = h.diagnostics
    assert d.code == "QC112" and len(d.message) < 300


def test_nbytes_helper_matches_reader() -> None:
    assert nbytes("F4", [2, 4]) == 4 and nbytes("F6_E2M3", [4]) == 3


# --------------------------------------------------------------------------- examples, fuzz


@pytest.mark.parametrize(
    "name", ["nvfp4.safetensors", "broken_seeds.safetensors", "w4a8_codebook.safetensors"]
)
def test_examples_agree_with_safetensors(examples_dir: Path, name: str) -> None:
    safetensors = pytest.importorskip("safetensors")
    path = examples_dir / name
    with LocalFile(path) as src:
        h = read_header(src)
    assert h.diagnostics == []
    with safetensors.safe_open(str(path), "numpy") as f:
        assert sorted(f.keys()) == sorted(h.tensors)
        assert f.metadata() == h.metadata
        for key in h.tensors:
            assert tuple(f.get_slice(key).get_shape()) == h.tensors[key].shape
            assert f.get_slice(key).get_dtype() == h.tensors[key].dtype


def test_mutated_headers_never_raise(examples_dir: Path) -> None:
    """3,000 deterministic byte mutations of a real header: diagnostics, never an exception."""
    import random

    data = (examples_dir / "fp8_e4m3fn.safetensors").read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    head = data[: 8 + n]
    rng = random.Random(2)
    codes: set[str] = set()
    for i in range(3000):
        b = bytearray(head)
        for _ in range(1 + i % 4):
            pos = rng.randrange(len(b)) if i % 7 else rng.randrange(8)
            b[pos] = rng.choice(b'{}[]",:0123456789-.eE \x00\xff') if i % 2 else rng.randrange(256)
        if i % 11 == 0:
            b = b[: rng.randrange(len(b))]
        h = read_header(MemorySource(bytes(b) + data[8 + n :]))
        codes |= {d.code for d in h.diagnostics}
    assert len(codes) >= 8  # the mutations reach many different checks


def test_extra_entry_fields_warn_and_keep_the_tensor() -> None:
    h = read_header(MemorySource(raw({"a": {**ONE, "offset": 0}}, b"\0", pad=True)))
    [d] = h.diagnostics
    assert (d.code, d.effective_severity.value, d.targets) == ("QC121", "warning", [])
    assert list(h.tensors) == ["a"]


@pytest.mark.parametrize(
    "meta",
    [
        {"_quantization_metadata": json.dumps({"layers": {"a": {"format": "float8_e4m3fn"}}})},
        {"quote": 'say "hi"', "slash": "a/b", "tab": "a\tb", "nl": "x\ny"},
        {"backslash": "C:\\models\\x", "quote": '"'},
    ],
)
def test_escapes_without_repeats_are_not_duplicates(
    meta: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Metadata with escaped quotes (a JSON string inside a value, as ComfyUI writes
    `_quantization_metadata`), slashes or backslashes has no repeated key: none is reported,
    and without escaped backslashes the re-parse with a key hook is not even needed."""
    import quantcheck.io.header as header

    data = raw({"__metadata__": meta, "a": entry("U8", [1], 0, 1)}, b"\0", pad=True)
    h = read_header(MemorySource(data))
    assert h.diagnostics == [] and h.metadata == meta
    if not any("\\" in k or "\\" in v for k, v in meta.items()):

        def no_reparse(self: object, pairs: object) -> None:
            raise AssertionError("header parsed again for duplicate keys")

        monkeypatch.setattr(header._Duplicates, "__call__", no_reparse)
        monkeypatch.setattr(header, "_last_clean", [])  # parse it, not replay it
        assert read_header(MemorySource(data)).diagnostics == []


def _entry_variants() -> list[object]:
    """Entries near the edges of the fast path: every shape, dtype and offset form it
    takes or refuses."""
    shapes: list[object] = [
        [],
        [1],
        [3],
        [0],
        [2, 3],
        [0, 3],
        [3, 0],
        [True],
        [1.0],
        [-1],
        [2, 3, 4],
        [1, 1, 1, 1],
        [2**64],
        [2**32, 2**32],
        [2**33, 2**32],
        [2**63, 2],
        ["3"],
        [None],
        [[2]],
        5,
        None,
        [2**64, 0],
        [2**70, 2**70],
    ]
    offsets: list[object] = [
        [0, 0],
        [0, 1],
        [0, 4],
        [0, 6],
        [0, 24],
        [0, 48],
        [0, 96],
        [2, 26],
        [4, 0],
        [-1, 3],
        [0, 2**64 * 4],
        [0, 2**66],
        [0, 2**64],
        [0],
        [0, 1, 2],
        [0.0, 4],
        [True, 4],
        "0-4",
        None,
        "04",  # two characters: unpacks into two strings
        {"0": 0, "4": 4},  # two keys: unpacks into two strings
        7,
        [[0], 4],
        [0, "4"],
    ]
    out: list[object] = []
    for dtype in ("U8", "F32", "BF16", "F64", "F4", "F6_E2M3", "FP8", 7, None, ["U8"], {"U8": 1}):
        for shape in shapes:
            for offs in offsets:
                out.append({"dtype": dtype, "shape": shape, "data_offsets": offs})
    out += [
        5,
        [],
        "x",
        None,
        {},
        {"dtype": "U8", "shape": [1]},
        {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": 1},
        {"dtype": "U8", "shape": [1], "offsets": [0, 1]},
    ]
    return out


def test_fast_entry_path_agrees_with_field_by_field_validation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every entry the one-pass fast path accepts, the field-by-field path accepts alike;
    every other entry is reported exactly as before. The slow path alone is forced by
    emptying the table of whole-byte dtypes."""
    import quantcheck.io.header as header

    monkeypatch.setattr(header, "_last_clean", [])  # no replay: the slow path must parse
    monkeypatch.setattr(header, "REPLAY_MAX_HEADER", -1)

    def read(entries: dict[str, object]) -> tuple[object, ...]:
        data = raw(entries, b"\0" * 64, pad=True)
        h = read_header(MemorySource(data, name="x.safetensors"))
        return (
            h.usable,
            h.rejected,
            list(h.tensors.items()),
            [(d.code, d.message, d.tensor, d.pointer) for d in h.diagnostics],
        )

    variants = _entry_variants()
    for i in range(0, len(variants), 50):
        entries = {f"t{j}": e for j, e in enumerate(variants[i : i + 50], start=i)}
        fast = read(entries)
        with monkeypatch.context() as m:
            m.setattr(header, "_WHOLE_BYTES", {})
            slow = read(entries)
        assert fast == slow
    # tilings in header order, out of order, with gaps, overlaps and short or long data
    u8 = [entry("U8", [4], 0), entry("U8", [4], 4), entry("U8", [2, 2], 8)]
    layouts = [
        u8,
        u8[::-1],
        [u8[0], u8[2]],
        [u8[0], u8[0], u8[1]],
        [entry("U8", [4], 1), entry("U8", [4], 5)],
        [u8[0], entry("U8", [0], 4), u8[1]],
    ]
    for layout in layouts:
        for data in (b"", b"\0" * 11, b"\0" * 12, b"\0" * 13):
            doc = raw({f"t{j}": e for j, e in enumerate(layout)}, data, pad=True)
            fast = read_header(MemorySource(doc))
            with monkeypatch.context() as m:
                m.setattr(header, "_WHOLE_BYTES", {})
                slow = read_header(MemorySource(doc))
            assert [(d.code, d.message) for d in fast.diagnostics] == [
                (d.code, d.message) for d in slow.diagnostics
            ]
            assert fast.tensors == slow.tensors
    for e in variants:  # one at a time: the tiling findings of a single entry too
        fast = read({"t": e})
        with monkeypatch.context() as m:
            m.setattr(header, "_WHOLE_BYTES", {})
            assert read({"t": e}) == fast, e


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1}',
        '{"a":1}   ',
        '{"a":1} \t\r\n',
        ' {"a":1}',
        '\ufeff{"a":1}',
        '{"a":1} x',
        '{"a":1}\u00a0',  # not JSON whitespace
        '{"a":1}{}',
        '{"a":',
        "",
        "   ",
        "[1, 2]",
        '"s"',
        "1e5",
        "NaN",
        '{"a": 1' + "0" * 5000 + "}",  # past the int-digits limit
        "[" * 100_000 + "]" * 100_000,  # too deep
        '{"a":"\\ud800"}',
    ],
)
def test_loads_agrees_with_json_loads(text: str) -> None:
    """The header's direct scanner call returns what `json.loads` returns, or raises what it
    raises, with the same message."""
    from quantcheck.io.header import _loads

    def outcome(fn: object) -> object:
        try:
            return ("value", fn(text))  # type: ignore[operator]
        except (ValueError, RecursionError) as exc:
            return (type(exc), str(exc))

    assert outcome(_loads) == outcome(json.loads)


@pytest.mark.parametrize(
    ("body", "repeated"),
    [
        # escapes at both ends of the text, a repeat between them
        (
            '{"__metadata__":{"q":"\\"x\\""},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
            '"z\\"":{"dtype":"U8","shape":[0],"data_offsets":[1,1]}}',
            ["a"],
        ),
        # one escape only, the last string of the text; a repeat before it
        (
            '{"__metadata__":{"k":"1","k":"2"},'
            '"a\\"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
            ["k"],
        ),
        # an escaped backslash as the last escape: the quote after it delimits
        (
            '{"__metadata__":{"q":"\\"","k":"1","k":"2"},'
            '"a\\\\":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
            ["k"],
        ),
        # escapes, no repeat
        (
            '{"__metadata__":{"q":"\\"\\\\\\""},'
            '"a\\"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
            [],
        ),
    ],
)
def test_repeats_among_escapes_are_found(body: str, repeated: list[str]) -> None:
    """Escapes are searched for only between the first and last backslash of the header:
    repeats next to escapes anywhere in the text are still reported, and none invented."""
    h = read_header(MemorySource(dup(body)))
    found = [d.message.split("'")[1] for d in h.diagnostics if d.code == "QC107"]
    assert found == repeated
    assert {d.code for d in h.diagnostics} <= {"QC107"}
