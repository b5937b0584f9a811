"""Work shared across the checkpoints of one `check_many` run (marker decodes, format-rule
findings by layer signature, whole small files read once) leaves every result identical to
checking each checkpoint on its own."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from quantcheck.io import source
from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.io.source import SMALL_FILE, LocalFile
from quantcheck.many import check_many, check_spec
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.discover import discover


def fp8_layers(
    prefixes: list[str], marker: dict[str, object], scale: bool = True
) -> list[RawTensor]:
    out: list[RawTensor] = []
    for p in prefixes:
        out += [RawTensor(f"{p}.weight", "F8_E4M3", (16, 16), bytes(256)), marker_tensor(p, marker)]
        if scale:
            out.append(RawTensor(f"{p}.weight_scale", "F32", (), struct.pack("<f", 0.5)))
    return out


def test_many_results_equal_one_at_a_time(tmp_path: Path, examples_dir: Path) -> None:
    root = tmp_path / "models"
    for sub in ("a", "b"):  # every example twice: same layers, other file names
        (root / sub).mkdir(parents=True)
        for f in sorted(examples_dir.glob("*.safetensors")):
            shutil.copy(f, root / sub / f"{sub}_{f.name}")
    # Same layer signatures under other prefixes and files, with findings: a missing scale,
    # an unknown marker key, a format name that is wrong.
    bad = {"format": "float8_e4m3fn", "made_up_key": 1}
    for i, prefixes in enumerate((["blocks.0.attn", "blocks.1.attn"], ["net.x", "net.y"], ["z"])):
        write_safetensors(root / f"noscale_{i}.safetensors", fp8_layers(prefixes, bad, scale=False))
        write_safetensors(
            root / f"typo_{i}.safetensors", fp8_layers(prefixes, {"format": "float8_e4m3"})
        )
    specs = discover([str(root)])
    assert len(specs) == 2 * len(list(examples_dir.glob("*.safetensors"))) + 6
    many = [r.to_json() for r in check_many(specs)]
    alone = [check_spec(s).to_json() for s in specs]
    assert many == alone
    assert sum(len(doc["diagnostics"]) for doc in many) > 40  # the findings are real


def test_small_file_is_read_once_and_served_from_memory(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    write_safetensors(path, fp8_layers(["a"], {"format": "float8_e4m3fn"}))
    data = path.read_bytes()
    assert len(data) <= SMALL_FILE
    with LocalFile(path) as src:
        assert src.read(0, 8) == data[:8]
        path.write_bytes(b"x" * len(data))  # later reads come from the first one
        assert src.read(8, 100) == data[8:108]
        assert src.read_many([(len(data) - 4, 10), (3, 2)]) == [data[-4:], data[3:5]]
        assert src.read(len(data), 5) == b""


def test_read_many_equals_one_read_per_range(tmp_path: Path) -> None:
    """`read_many` slices the in-memory copy directly; edge ranges give what `read` gives."""
    path = tmp_path / "m.safetensors"
    data = bytes(range(256)) * 3
    path.write_bytes(data)
    size = len(data)
    ranges = [
        (o, n)
        for o in (0, 1, 100, size - 3, size - 1, size, size + 4)
        for n in (-2, 0, 1, 3, 10, size, size + 10)
    ]
    for first_read in (False, True):
        for drop in (False, True):
            with LocalFile(path) as src:
                if drop:
                    src.drop_buffer()
                if first_read:
                    src.read(0, 1)
                got = src.read_many(ranges)
                assert got == [src.read(o, n) for o, n in ranges]
                assert got == [data[o : o + n] if n > 0 else b"" for o, n in ranges]
    with LocalFile(path) as src:
        assert src.read_many([]) == []


def test_large_file_is_read_per_range(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    path.write_bytes(bytes(range(256)) * (SMALL_FILE // 256 + 1))
    with LocalFile(path) as src:
        assert src.read(0, 4) == bytes(range(4))
        with open(path, "r+b") as f:
            f.write(b"\xff" * 8)
        assert src.read(0, 4) == b"\xff" * 4


def test_dropped_or_over_budget_small_file_is_read_per_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.safetensors"
    path.write_bytes(b"a" * 100)
    held = source._buffered[0]  # copies other tests' unclosed files may still hold
    with LocalFile(path) as src:
        assert src.read(0, 2) == b"aa"
        src.drop_buffer()
        path.write_bytes(b"b" * 100)
        assert src.read(0, 2) == b"bb"
    monkeypatch.setattr(source, "BUFFER_BUDGET", held + 150)
    with LocalFile(path) as one, LocalFile(path) as two:
        assert one.read(0, 1) == b"b" and two.read(0, 1) == b"b"
        path.write_bytes(b"c" * 100)
        assert one.read(0, 1) == b"b"  # the first fits the budget
        assert two.read(0, 1) == b"c"  # the second does not: read from the file
    assert source._buffered[0] == held


def test_loading_keeps_no_copy_of_small_files(tmp_path: Path) -> None:
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"s{i}.safetensors")
        write_safetensors(paths[-1], fp8_layers([f"l{i}"], {"format": "float8_e4m3fn"}))
    held = source._buffered[0]
    with load_checkpoint([str(p) for p in paths]) as ck:
        assert len(ck.markers) == 3
        assert source._buffered[0] == held
