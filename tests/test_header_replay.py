"""A header without findings is remembered and replayed for the next file with the same header
bytes and size (`io.header._replay`): the replayed header equals a fresh parse, file name
included; any other header is parsed afresh."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import quantcheck.io.header as header
from hostile import entry, raw, tensors
from quantcheck.io.header import Header, read_header
from quantcheck.io.source import MemorySource
from test_header import CASES, _entry_variants


@pytest.fixture(autouse=True)
def replaying() -> Iterator[None]:
    """Replay on, as while many checkpoints are checked."""
    header.shared_header_replay(True)
    yield
    header.shared_header_replay(False)


def test_off_by_default_and_off_forgets() -> None:
    data = tensors([("a.weight", "F8_E4M3", [4, 4])])
    header.shared_header_replay(False)
    read_header(MemorySource(data, name="a"))
    assert header._last_clean == []  # one file read twice by one process is parsed twice
    header.shared_header_replay(True)
    read_header(MemorySource(data, name="a"))
    assert header._last_clean
    header.shared_header_replay(False)
    assert header._last_clean == []


def _fresh(data: bytes, name: str, monkeypatch: pytest.MonkeyPatch) -> Header:
    with monkeypatch.context() as m:
        m.setattr(header, "_last_clean", [])
        m.setattr(header, "REPLAY_MAX_HEADER", -1)
        return read_header(MemorySource(data, name=name))


def _inputs(examples_dir: Path) -> list[bytes]:
    out = [c.data for c in CASES]
    out += [p.read_bytes() for p in sorted(examples_dir.glob("*.safetensors"))]
    out += [
        tensors([("a.weight", "F8_E4M3", [4, 4]), ("a.weight_scale", "F32", [])], {"x": "y"}),
        tensors([("a.weight", "F8_E4M3", [4, 4])]),
        raw({"t": entry("U8", [1], 0)}, b"\0", pad=True),
        raw(b"{}"),
    ]
    for e in _entry_variants():
        out.append(raw({"t": e}, b"\0" * 64, pad=True))
    return out


def _same(a: Header, b: Header) -> None:
    assert a == b
    assert [tuple(t) for t in a.tensors.values()] == [tuple(t) for t in b.tensors.values()]
    assert all(type(t) is header.TensorInfo for t in a.tensors.values())
    assert [d.to_json() for d in a.diagnostics] == [d.to_json() for d in b.diagnostics]


def test_replayed_headers_equal_fresh_parses(
    examples_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every input read after itself (the same name and another name), after a clean header,
    and with one byte of data more or less: each time the same as a fresh parse."""
    inputs = _inputs(examples_dir)
    clean = tensors([("w", "U8", [2])])
    replayed = 0
    for data in inputs:
        variants = [data, data + b"\0", data[:-1]] if len(data) > 8 else [data]
        for d in variants:
            for prior in (clean, data):
                monkeypatch.setattr(header, "_last_clean", [])
                read_header(MemorySource(prior, name="first.safetensors"))
                before = list(header._last_clean)
                for name in ("first.safetensors", "second.safetensors"):
                    got = read_header(MemorySource(d, name=name))
                    _same(got, _fresh(d, name, monkeypatch))
                    replayed += bool(before) and before[0][0] == d[8 : 8 + got.header_len]
    assert replayed > 50  # the replay itself was exercised, not only fresh parses


def test_a_clean_header_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    data = tensors([("a.weight", "F8_E4M3", [4, 4]), ("a.comfy_quant", "U8", [2])], {"k": "v"})
    first = read_header(MemorySource(data, name="a.safetensors"))
    monkeypatch.setattr(header, "_loads", None)  # any parse would fail now
    second = read_header(MemorySource(data, name="b.safetensors"))
    assert second.file == "b.safetensors" and second.usable and second.diagnostics == []
    files = {n: t.file for n, t in second.tensors.items()}
    assert files == dict.fromkeys(first.tensors, "b.safetensors")
    assert [t[:5] for t in second.tensors.values()] == [t[:5] for t in first.tensors.values()]
    assert second.metadata == first.metadata and second.metadata is not first.metadata
    second.metadata["k"] = "changed"  # a caller changing its header changes no later one
    second.tensors.clear()
    third = read_header(MemorySource(data, name="c.safetensors"))
    assert third.metadata == {"k": "v"} and len(third.tensors) == 2


def test_headers_with_findings_are_never_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    data = raw({"t": entry("U8", [1], 0)}, b"\0\0", pad=False)  # QC118 and QC122
    assert read_header(MemorySource(data)).diagnostics
    monkeypatch.setattr(header, "_loads", None)
    with pytest.raises(TypeError):
        read_header(MemorySource(data))
