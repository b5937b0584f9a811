"""Hostile write destinations and interruptions (issue 12): devices and FIFOs named by -o,
symlinks, half-replaced sharded folders, SIGTERM, stale temp files, umask, shard names that
repeat in different subfolders. Every write command is covered: fix, quantize, dequantize,
report."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.io import outpath
from quantcheck.io.build import RawTensor, write_safetensors
from quantcheck.io.outpath import OLD_SUFFIX, TMP_SUFFIX, clean_stale, temp_prefix
from quantcheck.model.checkpoint import load_checkpoint

from ._util import needs_rewrite, sha, tensor_bytes
from .test_writer import CHILD_SLOW, _big, _child

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "examples" / "broken_seeds.safetensors"
NVFP4 = ROOT / "examples" / "nvfp4.safetensors"


def _f32(name: str, v: bytes = b"\0\0\x80?") -> RawTensor:
    return RawTensor(name, "F32", (1,), v)


def _sharded(
    folder: Path, shards: dict[str, list[str]], index: str = "model.safetensors.index.json"
) -> Path:
    """A folder of shards (names may hold subfolders) and its index."""
    folder.mkdir(parents=True, exist_ok=True)
    wmap = {}
    for i, (name, tensors) in enumerate(shards.items()):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        write_safetensors(folder / name, [_f32(t, bytes([i, 0, 0x80, 0x3F])) for t in tensors])
        needs_rewrite(folder / name)  # so that `fix` writes the set
        wmap |= {t: name for t in tensors}
    (folder / index).write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    return folder / index


def _temps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith((TMP_SUFFIX, OLD_SUFFIX))]


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# ------------------------------------------------------------ 1. non-regular destinations

WRITERS = {
    "fix": lambda out: ["fix", str(SEEDS), "-o", out],
    "quantize": lambda out: ["quantize", str(SEEDS), "-o", out, "--to", "float8_e4m3fn"],
    "dequantize": lambda out: ["dequantize", str(NVFP4), "-o", out],
    "report": lambda out: ["report", str(SEEDS), "-o", out],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_fifo_destination_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "out.safetensors"
    os.mkfifo(fifo)
    assert main(WRITERS[command](str(fifo))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "FIFO" in err and "not a regular file" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.safetensors"]


def _device(tmp_path: Path) -> Path:
    """A character device in tmp_path (mknod as root), else a symlink to one."""
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        os.symlink("/dev/null", dev)
    return dev


@pytest.mark.parametrize("command", ["fix", "report"])
def test_device_destination_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = _device(tmp_path)
    before = os.lstat(dev)
    assert main(WRITERS[command](str(dev))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "character device" in err, err
    after = os.lstat(dev)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert stat.S_ISCHR(os.stat(dev).st_mode)
    assert _temps(tmp_path) == []


def test_symlinked_device_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "out.safetensors"
    os.symlink(_device(tmp_path), link)
    assert main(WRITERS["fix"](str(link))) == 2
    assert os.path.islink(link) and stat.S_ISCHR(os.stat(link).st_mode)


def test_file_where_sharded_folder_goes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    assert main(["fix", str(index), "-o", str(fifo)]) == 2
    assert "a sharded output needs a folder" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---------------------------------------------------------------------------- symlinks


def test_symlink_destination_replaces_its_target(tmp_path: Path) -> None:
    """Decision: a symlink named by -o is followed; its target is replaced (temp file in the
    target's folder) and the link stays a link."""
    elsewhere = tmp_path / "disk"
    elsewhere.mkdir()
    target = elsewhere / "model.safetensors"
    target.write_bytes(b"old")
    here = tmp_path / "models"
    here.mkdir()
    link = here / "model.safetensors"
    os.symlink(target, link)
    assert main(WRITERS["fix"](str(link))) in (0, 1)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert tensor_bytes([str(target)])
    assert sorted(p.name for p in here.iterdir()) == ["model.safetensors"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["model.safetensors"]


def test_dangling_symlink_destination_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "out.safetensors"
    os.symlink(tmp_path / "nowhere" / "x.safetensors", link)
    assert main(WRITERS["fix"](str(link))) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert os.path.islink(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.safetensors"]


# ----------------------------------------------------- 2. sharded output, all or nothing


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): sha(p) if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


def test_folder_in_a_shards_place_refused_before_any_shard_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(out, {"p1.safetensors": ["old.a"], "p3.safetensors": ["old.c"]})
    (out / "p2.safetensors").mkdir()
    before = _snapshot(out)
    assert main(["fix", str(index), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "p2.safetensors is a folder" in err and err.count("\n") == 1
    assert _snapshot(out) == before
    assert _temps(tmp_path) == []


def test_failed_switch_leaves_the_old_set_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(out, {"p1.safetensors": ["old.a"], "p2.safetensors": ["old.b"]})
    before = _snapshot(out)

    def busy(a: str, b: str) -> bool:
        raise OSError(16, "Device or resource busy", b)

    monkeypatch.setattr(outpath, "_exchange", busy)
    assert main(["fix", str(index), "-o", str(out)]) == 2
    assert "nothing was written there" in capsys.readouterr().err
    assert _snapshot(out) == before
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_rewrite_switches_the_whole_set_and_keeps_other_files(
    exchange: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not exchange:
        monkeypatch.setattr(outpath, "_exchange", lambda a, b: False)
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(
        out, {"p1.safetensors": ["old.a"], "p2.safetensors": ["old.b"], "p3.safetensors": ["old.c"]}
    )  # a previous, larger output
    (out / "README.md").write_text("mine")
    (out / "notes").mkdir()
    (out / "notes" / "a.txt").write_text("also mine")
    assert main(["fix", str(index), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "model.safetensors.index.json",
        "notes",
        "p1.safetensors",
        "p2.safetensors",
    ]
    assert (out / "README.md").read_text() == "mine"
    assert (out / "notes" / "a.txt").read_text() == "also mine"
    assert tensor_bytes([str(out)]) == tensor_bytes([str(index)])
    assert _temps(tmp_path) == []


def test_kill_between_fallback_renames_is_undone(tmp_path: Path) -> None:
    """The old folder staged aside (`.quantcheck-old`) by a writer killed before the second
    rename comes back when the next write into that folder starts."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    aside = tmp_path / f"{temp_prefix('out')}x1y2z3{OLD_SUFFIX}".replace(
        f".{os.getpid()}.", f".{dead.pid}."
    )
    aside.mkdir()
    (aside / "p1.safetensors").write_bytes(b"old")
    staged = tmp_path / aside.name.replace(OLD_SUFFIX, TMP_SUFFIX)
    staged.mkdir()
    clean_stale(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (tmp_path / "out" / "p1.safetensors").read_bytes() == b"old"


# ------------------------------------------------------------ 15. repeated shard names


def test_same_shard_name_in_two_subfolders_keeps_the_layout(tmp_path: Path) -> None:
    index = _sharded(
        tmp_path / "in",
        {"s1/model.safetensors": ["a.weight"], "s2/model.safetensors": ["b.weight"]},
    )
    out = tmp_path / "out"
    assert main(["fix", str(index), "-o", str(out)]) == 0
    doc = json.loads((out / "model.safetensors.index.json").read_text())
    assert doc["weight_map"] == {
        "a.weight": "s1/model.safetensors",
        "b.weight": "s2/model.safetensors",
    }
    with load_checkpoint(str(out / "model.safetensors.index.json")) as ck:
        assert not ck.diagnostics and len(ck.shards) == 2
    assert tensor_bytes([str(out)]) == tensor_bytes([str(index)])
    # and again, over the previous output
    assert main(["fix", str(index), "-o", str(out)]) == 0
    assert tensor_bytes([str(out / "model.safetensors.index.json")]) == tensor_bytes([str(index)])


def test_same_shard_name_given_as_files_keeps_the_layout(tmp_path: Path) -> None:
    for d, t in (("a", "x.weight"), ("b", "y.weight")):
        (tmp_path / d).mkdir()
        write_safetensors(tmp_path / d / "model.safetensors", [_f32(t)])
        needs_rewrite(tmp_path / d / "model.safetensors")
    out = tmp_path / "out"
    assert (
        main(
            [
                "fix",
                "--as-one",
                str(tmp_path / "a" / "model.safetensors"),
                str(tmp_path / "b" / "model.safetensors"),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads((out / "model.safetensors.index.json").read_text())
    assert doc["weight_map"] == {
        "x.weight": "a/model.safetensors",
        "y.weight": "b/model.safetensors",
    }


# -------------------------------------------------------------------- 3. SIGTERM, stale


def test_sigterm_mid_write_cleans_up_and_exits_143(tmp_path: Path) -> None:
    src, out = tmp_path / "in.safetensors", tmp_path / "out.safetensors"
    _big(src, 4)
    proc = _child(CHILD_SLOW, "fix", str(src), "-o", str(out))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _temps(tmp_path):
        time.sleep(0.02)
    assert _temps(tmp_path), "the writer never started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "terminated" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.safetensors"]


def test_stale_temps_of_dead_writers_go_live_and_foreign_ones_stay(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = temp_prefix("other.safetensors")
    stale = tmp_path / (mine.replace(f".{os.getpid()}.", f".{dead.pid}.") + "abc" + TMP_SUFFIX)
    live = tmp_path / (mine.replace(f".{os.getpid()}.", f".{os.getppid()}.") + "abc" + TMP_SUFFIX)
    foreign = tmp_path / f".other.safetensors.{dead.pid}.0badc0de.abc{TMP_SUFFIX}"
    for p in (stale, live, foreign):
        p.write_bytes(b"x")
    write_safetensors(tmp_path / "in.safetensors", [_f32("a.weight")])
    needs_rewrite(tmp_path / "in.safetensors")
    # a write to a different destination in the same folder removes only the dead writer's
    assert (
        main(["fix", str(tmp_path / "in.safetensors"), "-o", str(tmp_path / "out.safetensors")])
        == 0
    )
    assert not stale.exists()
    assert live.exists() and foreign.exists()


# ------------------------------------------------------------------------- 4. umask


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_outputs_follow_the_umask(mask: int, tmp_path: Path, umask: None) -> None:
    os.umask(mask)
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "s/p2.safetensors": ["b.weight"]}
    )
    one, many, html = tmp_path / "one.safetensors", tmp_path / "many", tmp_path / "r.html"
    assert main(["fix", str(tmp_path / "in" / "p1.safetensors"), "-o", str(one)]) == 0
    assert main(["fix", str(index), "-o", str(many)]) == 0
    assert main(["report", str(SEEDS), "-o", str(html)]) == 0

    def mode(p: Path) -> int:
        return stat.S_IMODE(os.stat(p).st_mode)

    assert mode(one) == mode(html) == 0o666 & ~mask
    assert mode(many) == mode(many / "s") == 0o777 & ~mask
    for f in ("p1.safetensors", "s/p2.safetensors", "model.safetensors.index.json"):
        assert mode(many / f) == 0o666 & ~mask, f


def test_rewrite_keeps_the_output_folders_mode(tmp_path: Path, umask: None) -> None:
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o750)
    assert main(["fix", str(index), "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o750
    shutil.rmtree(out)
