"""Marker decoding: `<layer>.comfy_quant` tensors and `__metadata__._quantization_metadata`.

Codes QC201-QC211. Markers are decoded like both runtimes (`json.loads` on the raw bytes / the
header string); only the marker bytes are read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, tensors
from quantcheck.diagnostics import Diagnostic, Severity
from quantcheck.io.header import read_header
from quantcheck.io.source import MemorySource
from quantcheck.model.checkpoint import Checkpoint, load_checkpoint
from quantcheck.model.markers import (
    MAX_MARKER_BYTES,
    decode_marker_bytes,
    merge_markers,
    read_header_markers,
    read_tensor_markers,
    shared_decode_cache,
)

L = "blocks.0.attn.to_q"
MK = f"{L}.comfy_quant"


def layer_tensors(
    marker: bytes | None = None, dtype: str = "U8", shape: list[int] | None = None
) -> list[tuple[Any, ...]]:
    """An fp8 layer (weight, scale) with marker bytes stored as `dtype` (shape: bytes/width)."""
    out: list[tuple[Any, ...]] = [
        (f"{L}.weight", "F8_E4M3", [4, 4]),
        (f"{L}.weight_scale", "F32", []),
    ]
    if marker is not None:
        out.append((MK, dtype, shape if shape is not None else [len(marker)], marker))
    return out


def load(
    tmp_path: Path,
    specs: list[tuple[Any, ...]],
    metadata: dict[str, Any] | None = None,
    name: str = "m.safetensors",
) -> Checkpoint:
    path = tmp_path / name
    path.write_bytes(tensors(specs, metadata))
    return load_checkpoint([str(path)])


def only(ck: Checkpoint) -> Diagnostic:
    assert len(ck.diagnostics) == 1, [(d.code, d.message) for d in ck.diagnostics]
    return ck.diagnostics[0]


# --------------------------------------------------------------------------- tensor markers


def test_valid_marker(tmp_path: Path) -> None:
    ck = load(tmp_path, layer_tensors(marker_bytes({"format": "float8_e4m3fn"})))
    assert ck.diagnostics == []
    m = ck.markers[L]
    assert m.format == "float8_e4m3fn" and m.fields == {"format": "float8_e4m3fn"}
    assert [(s.origin, s.key) for s in m.sources] == [("tensor", MK)]
    assert ck.layers[L].marker is m and ck.layers[L].format == "float8_e4m3fn"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"format": \x00\x00', "marker is not valid JSON at byte"),
        (b'{"format": "nvfp4",}', "not valid JSON"),  # trailing comma
        (b"{'format': 'nvfp4'}", "not valid JSON"),
        (b'{"format": "nvfp4"} x', "Extra data"),
        (b'{"format": "nvfp4"}\x00\x00\x00\x00', "Extra data"),  # NUL padding after the object
        (b'{"format": "caf\xe9"}', "marker byte 15 is not valid text"),
        (b"[" * 30_000 + b"]" * 30_000, "nested too deeply"),
    ],
)
def test_marker_not_json(tmp_path: Path, raw: bytes, says: str) -> None:
    ck = load(tmp_path, layer_tensors(raw))
    d = only(ck)
    assert (d.code, d.tensor, d.layer) == ("QC201", MK, L)
    assert says in d.message
    assert L not in ck.markers


def test_marker_empty(tmp_path: Path) -> None:
    d = only(load(tmp_path, layer_tensors(b"")))
    assert d.code == "QC201" and "the marker tensor is empty" in d.message


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'["nvfp4"]', "list"),
        (b'"nvfp4"', "str"),
        (b"1", "int"),
        (b"null", "NoneType"),
        (b"true", "bool"),
    ],
)
def test_marker_not_object(tmp_path: Path, raw: bytes, kind: str) -> None:
    ck = load(tmp_path, layer_tensors(raw))
    d = only(ck)
    assert d.code == "QC202" and f"marker decodes to {kind}" in d.message
    assert raw.decode() in d.message  # shows what was found
    assert d.effective_severity is Severity.ERROR and L not in ck.markers


@pytest.mark.parametrize("n", [1, 16, 40])
def test_marker_all_zero(tmp_path: Path, n: int) -> None:
    ck = load(tmp_path, layer_tensors(bytes(n)))
    d = only(ck)
    assert d.code == "QC203" and f"all {n} marker bytes are zero" in d.message
    assert (d.tensor, d.layer) == (MK, L) and L not in ck.markers


@pytest.mark.parametrize(
    "dtype",
    [
        "BF16",
        "F8_E4M3",
        "F8_E5M2",
        "F8_E8M0",
        "F8_E4M3FNUZ",
        "F8_E5M2FNUZ",
        "F4",
        "F6_E2M3",
        "F6_E3M2",
    ],
)
def test_marker_dtype_unreadable(tmp_path: Path, dtype: str) -> None:
    text = marker_bytes({"format": "nvfp4"})  # 19 bytes; pad to 24 so every width fits
    text += b" " * (24 - len(text))
    shape = [24 * 8 // {"BF16": 16, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}.get(dtype, 8)]
    ck = load(tmp_path, layer_tensors(text, dtype, shape))
    d = only(ck)
    assert d.code == "QC204" and f"marker is stored as {dtype}" in d.message
    assert (d.tensor, d.layer, d.pointer) == (MK, L, f"/{MK}/dtype")
    assert L not in ck.markers  # runtimes cannot read it, so neither do we


@pytest.mark.parametrize(
    ("dtype", "width"), [("I8", 1), ("BOOL", 1), ("I16", 2), ("F32", 4), ("U64", 8)]
)
def test_marker_dtype_not_u8_still_decoded(tmp_path: Path, dtype: str, width: int) -> None:
    text = marker_bytes({"format": "nvfp4"})
    text += b" " * (-len(text) % width)
    ck = load(tmp_path, layer_tensors(text, dtype, [len(text) // width]))
    d = only(ck)
    assert d.code == "QC205" and f"marker is stored as {dtype}" in d.message
    assert d.effective_severity is Severity.WARNING
    assert ck.markers[L].format == "nvfp4"  # raw bytes, like the runtimes


def test_marker_oversize(tmp_path: Path) -> None:
    text = b'{"format": "nvfp4", "pad": "' + b"x" * MAX_MARKER_BYTES + b'"}'
    ck = load(tmp_path, layer_tensors(text))
    d = only(ck)
    assert d.code == "QC206"
    assert f"marker is {len(text):,} bytes, over the 65,536-byte limit" in d.message
    assert L not in ck.markers


def test_marker_at_size_limit_is_read(tmp_path: Path) -> None:
    head = b'{"format": "nvfp4", "pad": "'
    text = head + b"x" * (MAX_MARKER_BYTES - len(head) - 2) + b'"}'
    assert len(text) == MAX_MARKER_BYTES
    ck = load(tmp_path, layer_tensors(text))
    assert ck.diagnostics == [] and ck.markers[L].format == "nvfp4"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_marker_bom_or_utf16_accepted_with_warning(tmp_path: Path, encoding: str) -> None:
    text = json.dumps({"format": "mxfp8"}).encode(encoding)
    ck = load(tmp_path, layer_tensors(text))
    d = only(ck)
    assert d.code == "QC207" and "byte-order mark or is UTF-16/32" in d.message
    assert d.effective_severity is Severity.WARNING
    assert ck.markers[L].format == "mxfp8"


def test_marker_whitespace_and_nan_accepted(tmp_path: Path) -> None:
    ck = load(tmp_path, layer_tensors(b' \n{"format":"nvfp4","x":NaN}\t'))
    assert ck.diagnostics == []
    assert ck.markers[L].format == "nvfp4" and ck.markers[L].fields["x"] != 0


def test_marker_past_end_of_file_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    data = tensors(layer_tensors(marker_bytes({"format": "nvfp4"})))
    path.write_bytes(data[:-5])  # the marker is the last tensor
    ck = load_checkpoint([str(path)])
    assert [d.code for d in ck.diagnostics] == ["QC117"]
    assert ck.markers == {}


class RecordingSource(MemorySource):
    def __init__(self, data: bytes) -> None:
        super().__init__(data, "rec.safetensors")
        self.ranges: list[tuple[int, int]] = []

    def read_many(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.ranges += ranges
        return super().read_many(ranges)


def test_only_marker_bytes_are_read() -> None:
    specs = layer_tensors(marker_bytes({"format": "nvfp4"}))
    specs.append(("other.comfy_quant", "U8", [2], b"{}"))
    src = RecordingSource(tensors(specs))
    h = read_header(src)
    found, diags = read_tensor_markers(src, h)
    assert diags == []
    assert src.ranges == [(h.tensors[MK].begin, 19), (h.tensors["other.comfy_quant"].begin, 2)]
    assert [(m.key, m.fields) for m in found] == [
        (MK, {"format": "nvfp4"}),
        ("other.comfy_quant", {}),
    ]


#: Marker bytes of every verdict: good, good but flagged (BOM, UTF-16), and each failure.
VERDICT_BYTES = [
    marker_bytes({"format": "nvfp4"}),
    b"\xef\xbb\xbf" + marker_bytes({"format": "nvfp4"}),
    '{"format": "mxfp8"}'.encode("utf-16-le"),
    b"[1, 2]",
    b"{",
    b"\x00\x00\x00",
    b"\xff{}",
    b"",
]


def test_repeated_marker_bytes_get_one_finding_per_tensor() -> None:
    """A verdict is reused for repeated bytes within a file and across files (shared cache),
    and every tensor still gets its own source or finding, exactly as decoded one by one."""
    specs: list[tuple[Any, ...]] = []
    for i, raw in enumerate(VERDICT_BYTES * 2):  # each byte string twice, apart
        specs.append((f"l{i}.comfy_quant", "U8", [len(raw)], raw))
    data = tensors(specs)

    def read() -> tuple[list[Any], list[Any]]:
        src = MemorySource(data, "m.safetensors")
        found, diags = read_tensor_markers(src, read_header(src))
        return [(m.key, m.fields) for m in found], [(d.code, d.tensor, d.message) for d in diags]

    alone = read()
    shared_decode_cache(True)
    try:
        first, again = read(), read()  # the second call takes every verdict from the cache
    finally:
        shared_decode_cache(False)
    assert alone == first == again
    found, diags = alone
    n = len(VERDICT_BYTES)
    # one by one: what each tensor gives on its own
    for i, raw in enumerate(VERDICT_BYTES):
        value, code, _ = decode_marker_bytes(raw)
        for name in (f"l{i}.comfy_quant", f"l{i + n}.comfy_quant"):
            codes = [c for c, t, _ in diags if t == name]
            used = [f for k, f in found if k == name]
            if code is not None:
                assert codes == [code] and used == []
            elif not isinstance(value, dict):
                assert codes == ["QC202"] and used == []
            elif i in (1, 2):
                assert codes == ["QC207"] and used == [value]
            else:
                assert codes == [] and used == [value]


def test_decode_marker_bytes_direct() -> None:
    assert decode_marker_bytes(b'{"format": "nvfp4"}') == ({"format": "nvfp4"}, None, None)
    assert decode_marker_bytes(b"\0\0")[1] == "QC203"
    assert decode_marker_bytes(b"")[1] == "QC201"
    value, code, detail = decode_marker_bytes(b"{")
    assert value is None and code == "QC201" and "not valid JSON" in str(detail)
    # a UTF-16 marker without BOM: json.loads detects the encoding from the zero bytes
    assert decode_marker_bytes('{"a": 1}'.encode("utf-16-le"))[0] == {"a": 1}


# --------------------------------------------------------------------------- header markers


def qmeta(doc: Any) -> dict[str, str]:
    return {"_quantization_metadata": doc if isinstance(doc, str) else json.dumps(doc)}


def test_header_marker_valid(tmp_path: Path) -> None:
    ck = load(
        tmp_path,
        layer_tensors(),
        qmeta({"format_version": "1.0", "layers": {L: {"format": "float8_e4m3fn"}}}),
    )
    assert ck.diagnostics == []
    m = ck.markers[L]
    assert m.format == "float8_e4m3fn" and [s.origin for s in m.sources] == ["header"]
    assert ck.layers[L].marker is m


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ("{not json", "_quantization_metadata is not valid JSON"),
        ("\ufeff" + json.dumps({"layers": {}}), "not valid JSON"),  # BOM in a str: rejected
        ([{"layers": {}}], "_quantization_metadata is list"),
        ({"quant_algo": "NVFP4"}, "no layers object (layers is missing)"),
        ({"layers": [L]}, "no layers object (layers is list)"),
        ({"layers": None}, "no layers object (layers is NoneType)"),
    ],
)
def test_header_marker_invalid(tmp_path: Path, doc: Any, says: str) -> None:
    ck = load(tmp_path, layer_tensors(), qmeta(doc))
    d = only(ck)
    assert d.code == "QC208" and says in d.message
    assert d.pointer == "/__metadata__/_quantization_metadata"
    assert ck.markers == {}


def test_header_marker_entry_not_object(tmp_path: Path) -> None:
    ck = load(tmp_path, layer_tensors(), qmeta({"layers": {L: "nvfp4", "b": {"format": "x"}}}))
    d = only(ck)
    assert d.code == "QC209" and f"header marker for {L!r} is str" in d.message
    assert d.layer == L
    assert list(ck.markers) == ["b"]  # the good entry is still read


def test_quant_format_is_read(tmp_path: Path) -> None:
    ck = load(
        tmp_path,
        layer_tensors(marker_bytes({"format": "nvfp4"})),
        {"quant_format": "nvfp4", "format": "pt"},
    )
    assert ck.quant_formats == {str(tmp_path / "m.safetensors"): "nvfp4"}
    assert ck.metadata["quant_format"] == "nvfp4"


# --------------------------------------------------------------------------- merging


def test_header_vs_tensor_conflict(tmp_path: Path) -> None:
    ck = load(
        tmp_path,
        layer_tensors(marker_bytes({"format": "float8_e4m3fn"})),
        qmeta({"layers": {L: {"format": "nvfp4"}}}),
    )
    d = only(ck)
    assert d.code == "QC210" and d.layer == L and d.data == {"field": "format"}
    assert '"nvfp4" in the _quantization_metadata header' in d.message
    assert '"float8_e4m3fn" in the marker tensor' in d.message
    assert d.effective_severity is Severity.ERROR
    # header first, then the tensor marker: the later source wins
    assert ck.markers[L].format == "float8_e4m3fn"
    assert [s.origin for s in ck.markers[L].sources] == ["header", "tensor"]


@pytest.mark.parametrize(
    ("a", "b"), [(True, 1), (16, 16.0), (0, False), ({"g": 1}, {"g": True}), ([1], [1.0])]
)
def test_loose_equality_is_a_warning_not_a_conflict(tmp_path: Path, a: Any, b: Any) -> None:
    ck = load(
        tmp_path,
        layer_tensors(marker_bytes({"format": "int8_tensorwise", "convrot": b})),
        qmeta({"layers": {L: {"format": "int8_tensorwise", "convrot": a}}}),
    )
    d = only(ck)
    assert d.code == "QC211" and "field 'convrot'" in d.message
    assert json.dumps(a) in d.message and json.dumps(b) in d.message
    assert d.effective_severity is Severity.WARNING


def test_identical_sources_are_silent(tmp_path: Path) -> None:
    m = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 16}
    ck = load(tmp_path, layer_tensors(marker_bytes(m)), qmeta({"layers": {L: m}}))
    assert ck.diagnostics == [] and ck.markers[L].fields == m


def test_different_fields_merge_without_conflict(tmp_path: Path) -> None:
    ck = load(
        tmp_path,
        layer_tensors(marker_bytes({"format": "int8_tensorwise"})),
        qmeta({"layers": {L: {"convrot": True}}}),
    )
    assert ck.diagnostics == []
    assert ck.markers[L].fields == {"convrot": True, "format": "int8_tensorwise"}


def test_nan_vs_nan_is_a_conflict() -> None:
    from quantcheck.model.markers import MarkerSource

    srcs = [
        MarkerSource("header", "f", {"x": float("nan")}, L),
        MarkerSource("tensor", "f", {"x": float("nan")}, MK),
    ]
    _, diags = merge_markers(srcs)
    assert [d.code for d in diags] == ["QC210"] and "NaN" in diags[0].message


def test_marker_get_looks_in_params() -> None:
    from quantcheck.model.markers import MarkerSource

    markers, _ = merge_markers(
        [
            MarkerSource(
                "tensor",
                "f",
                {
                    "format": "asym_w4a8_int8",
                    "params": {"group_size": 32, "convrot": True},
                    "convrot": False,
                },
                MK,
            )
        ]
    )
    m = markers[L]
    assert m.get("group_size") == 32 and m.get("convrot") is False and m.get("x", 7) == 7


def test_read_header_markers_none_without_metadata() -> None:
    h = read_header(MemorySource(tensors(layer_tensors(), {"format": "pt"})))
    assert read_header_markers(h) == ([], [])


def test_foundation_codes_are_registered() -> None:
    from quantcheck.rules.registry import all_rules

    rules = all_rules()
    wanted = (
        [f"QC{n}" for n in range(101, 123)]
        + [f"QC{n}" for n in range(201, 212)]
        + [f"QC{n}" for n in range(501, 506)]
    )
    for code in wanted:
        rule = rules[code]
        assert rule.name and rule.title and rule.checks and rule.remedy
        assert {"sglang", "comfyui"} <= set(rule.effects)


def test_marker_entries_by_position_equal_a_name_search() -> None:
    """The positions kept for a repeated name list find exactly the `.comfy_quant` entries a
    name-by-name search finds, for lists that repeat, change, or are too long to keep."""
    from quantcheck.model import markers as mod

    lists = [
        [],
        [MK],
        [".comfy_quant", "comfy_quant", "a.comfy_quantx", "a.comfy_quant", "a.weight"],
        ["a.weight", "a.comfy_quant", "b.comfy_quant", "b.weight", "c..comfy_quant"],
        ["a.weight", "a.comfy_quant", "b.comfy_quant", "b.weight", "c.comfy_quant."],
        [f"l{i}.comfy_quant" for i in range(mod.SCAN_MAX_NAMES + 1)],
    ]
    mod.shared_decode_cache(True)  # positions are kept while many checkpoints are checked
    try:
        _entries_by_position_equal_a_name_search(mod, lists)
    finally:
        mod.shared_decode_cache(False)
    assert mod._last_scan == []  # and forgotten after
    mod._marker_entries({MK: None})  # type: ignore[dict-item]
    assert mod._last_scan == []  # nothing kept outside


def _entries_by_position_equal_a_name_search(mod: Any, lists: list[list[str]]) -> None:
    for round_, names in enumerate([*lists, *lists, lists[3], lists[3], lists[4], lists[3]]):
        named: dict[str, Any] = {n: (round_, i) for i, n in enumerate(names)}
        got = mod._marker_entries(named)
        assert got == [v for n, v in named.items() if n.endswith(".comfy_quant")]
