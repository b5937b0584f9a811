"""The streaming writer: byte-exact copies, aligned headers, sharded output with an index,
atomic replacement, and no output after a kill or a full disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.io.source import LocalFile
from quantcheck.io.writer import (
    TMP_SUFFIX,
    Chunks,
    Copy,
    Data,
    OutFile,
    OutTensor,
    WriteError,
)
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.model.written import write_checkpoint

from ._util import STALE, sha, stale_layer, tensor_bytes

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _big(path: Path, mib: int = 4, fixable: bool = False) -> None:
    """`mib` MiB of data; with `fixable` also a layer `fix` repairs (so it writes)."""
    data = bytes((i * 7 + 3) & 0xFF for i in range(256)) * (mib * 4096)
    write_safetensors(
        path,
        [
            RawTensor("blob", "U8", (len(data),), data),
            RawTensor("b.weight", "F32", (2,), b"\x00\x00\x80?" * 2),
            *(stale_layer(STALE) if fixable else []),
        ],
        {"note": "kept"},
    )


def test_copy_data_chunks_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "in.safetensors"
    _big(src, 1)
    with load_checkpoint(str(src)) as ck:
        a = ck.tensors["blob"]
        f = OutFile(
            "x",
            metadata={"note": "kept"},
            tensors=[
                OutTensor("blob", "U8", a.shape, Copy(ck.shards[0].source, a.begin, a.nbytes)),
                OutTensor("m", "U8", (3,), Data(b"abc")),
                OutTensor("c", "U8", (5,), Chunks(5, lambda: [b"12", memoryview(b"345")])),
            ],
        )
        write_checkpoint([f], str(tmp_path / "out.safetensors"))
    out = tmp_path / "out.safetensors"
    raw = out.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0
    assert json.loads(raw[8 : 8 + n])["__metadata__"] == {"note": "kept"}
    got = tensor_bytes([str(out)])
    assert got["blob"] == tensor_bytes([str(src)])["blob"]
    assert got["m"][2] == b"abc" and got["c"][2] == b"12345"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TMP_SUFFIX)]


def test_wrong_chunk_size_leaves_nothing(tmp_path: Path) -> None:
    f = OutFile("x", tensors=[OutTensor("c", "U8", (5,), Chunks(5, lambda: [b"1234"]))])
    with pytest.raises(WriteError):
        write_checkpoint([f], str(tmp_path / "out.safetensors"))
    assert list(tmp_path.iterdir()) == []


def test_verify_refusal_keeps_old_output(tmp_path: Path) -> None:
    out = tmp_path / "out.safetensors"
    out.write_bytes(b"old")

    def refuse(ck: object) -> None:
        raise WriteError("no")

    f = OutFile("x", tensors=[OutTensor("m", "U8", (1,), Data(b"a"))])
    with pytest.raises(WriteError):
        write_checkpoint([f], str(out), verify=refuse)
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.safetensors"]


def test_sharded_in_sharded_out(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    stale = stale_layer(STALE)  # fix removes its marker: there is an edit to write
    write_safetensors(
        src / "p1.safetensors", [RawTensor("a.weight", "F32", (1,), b"\0" * 4), *stale]
    )
    write_safetensors(src / "p2.safetensors", [RawTensor("b.weight", "F32", (1,), b"\1" * 4)])
    index = src / "model.safetensors.index.json"
    wmap = {"a.weight": "p1.safetensors", "b.weight": "p2.safetensors"}
    wmap |= {t.name: "p1.safetensors" for t in stale}
    index.write_text(json.dumps({"metadata": {"format": "pt"}, "weight_map": wmap}))
    from quantcheck.cli.main import main

    assert main(["fix", str(index), "-o", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "model.safetensors.index.json").read_text())
    del wmap[stale[1].name]
    assert doc["weight_map"] == wmap
    assert doc["metadata"] == {"format": "pt", "total_size": 8 + len(stale[0].data)}
    with load_checkpoint(str(tmp_path / "out")) as ck:
        assert not ck.diagnostics and len(ck.shards) == 2
    before = tensor_bytes([str(index)])
    del before[stale[1].name]
    assert tensor_bytes([str(tmp_path / "out")]) == before


def test_refuses_to_overwrite_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.safetensors"
    _big(src, 1)
    before = sha(src)
    from quantcheck.cli.main import main

    assert main(["fix", str(src), "-o", str(src)]) == 2
    assert "overwrite an input" in capsys.readouterr().err
    assert sha(src) == before


CHILD_SLOW = """
import sys, time
from quantcheck.io import writer
writer.CHUNK = 64 * 1024
writer._Sink._copy_range = lambda self, *a: False
orig = writer._Sink.write
def slow(self, data):
    orig(self, data)
    time.sleep(0.02)
writer._Sink.write = slow
from quantcheck.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_killed_writer_leaves_input_and_no_output(tmp_path: Path) -> None:
    src, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    _big(src, 4, fixable=True)
    before = sha(src)
    proc = _child(CHILD_SLOW, "fix", str(src), "-o", str(out))
    deadline = time.monotonic() + 20
    temps: list[Path] = []
    while time.monotonic() < deadline and not temps:
        temps = [p for p in tmp_path.iterdir() if p.name.endswith(TMP_SUFFIX)]
        time.sleep(0.02)
    assert temps, "the writer never started"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sha(src) == before
    assert not out.exists()
    # The temp file is named for its destination and the writer's pid ...
    assert [p.name.startswith(f".out.safetensors.{proc.pid}.") for p in temps] == [True]
    # ... and the next write to the same destination removes it.
    from quantcheck.cli.main import main

    assert main(["fix", str(src), "-o", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors", "out.safetensors"]
    fixed = {k: v for k, v in tensor_bytes([str(src)]).items() if k != f"{STALE}.comfy_quant"}
    assert tensor_bytes([str(out)]) == fixed


CHILD_FULL = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))
from quantcheck.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE/SIGXFSZ")
def test_full_disk_gives_clear_error_and_no_output(tmp_path: Path) -> None:
    src, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    _big(src, 1, fixable=True)
    before = sha(src)
    proc = _child(CHILD_FULL, "fix", str(src), "-o", str(out))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "quantcheck: error:" in err and "file too large" in err
    assert "nothing was written" in err
    assert sha(src) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors"]


def test_local_copies_are_byte_exact_with_kernel_copy(tmp_path: Path) -> None:
    src = tmp_path / "in.safetensors"
    _big(src, 9)  # more than one 8 MiB chunk
    with LocalFile(str(src)) as lf, load_checkpoint(str(src)) as ck:
        ts = [
            OutTensor(t.name, t.dtype, t.shape, Copy(lf, t.begin, t.nbytes))
            for t in ck.tensors.values()
        ]
        write_checkpoint([OutFile("o", ts, {"note": "kept"})], str(tmp_path / "o.safetensors"))
    assert sha(tmp_path / "o.safetensors") == sha(src)


def test_planned_source_reads_what_the_writer_writes(tmp_path: Path) -> None:
    """Every byte range of a planned file (header, empty tensors, spans across tensors) reads
    exactly as the written file does."""
    from quantcheck.io.writer import PlannedSource

    sizes = [5, 0, 0, 3, 17, 0, 1, 8]
    out = OutFile(
        "p.safetensors",
        [
            OutTensor(f"t{i}", "U8", (n,), Data(bytes((i * 31 + j) & 0xFF for j in range(n))))
            for i, n in enumerate(sizes)
        ],
    )
    write_checkpoint([out], str(tmp_path / "p.safetensors"))
    disk = (tmp_path / "p.safetensors").read_bytes()
    planned = PlannedSource(out)
    assert planned.size == len(disk)
    for at in range(len(disk)):
        for n in (0, 1, 4, 9, len(disk) - at):
            assert planned.read(at, n) == disk[at : at + n], (at, n)
