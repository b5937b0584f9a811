"""Hostile write destinations and interruptions. Issue 12: devices and FIFOs named by -o,
symlinks, half-replaced sharded folders, SIGTERM, stale temp files, umask, shard names that
repeat in different subfolders. Issue 21: every write site through the one safe writer,
sockets and links to them, failed replaces, kept modes, owners and folder attributes, EXDEV,
SIGHUP, names that are not UTF-8. Every write command is covered: fix, quantize, dequantize,
report, --generate-baseline."""

from __future__ import annotations

import contextlib
import errno
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

from ._util import STALE, sha, stale_layer, tensor_bytes
from .test_writer import CHILD_SLOW, _child

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "examples" / "broken_seeds.safetensors"
NVFP4 = ROOT / "examples" / "nvfp4.safetensors"


def _f32(name: str, v: bytes = b"\0\0\x80?") -> RawTensor:
    return RawTensor(name, "F32", (1,), v)


def _fixed(path: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    """The tensors of the checkpoint at `path` as `fix` writes them: without the markers."""
    return {k: v for k, v in tensor_bytes([str(path)]).items() if not k.endswith(".comfy_quant")}


def _named(wmap: dict[str, str]) -> dict[str, str]:
    """A weight map without the `stale_layer` layers."""
    return {k: v for k, v in wmap.items() if not k.startswith(STALE)}


def _sharded(
    folder: Path, shards: dict[str, list[str]], index: str = "model.safetensors.index.json"
) -> Path:
    """A folder of shards (names may hold subfolders), each with a `stale_layer` layer, and its
    index."""
    folder.mkdir(parents=True, exist_ok=True)
    wmap = {}
    for i, (name, tensors) in enumerate(shards.items()):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        stale = stale_layer(f"{STALE}{i}.proj")
        f32 = [_f32(t, bytes([i, 0, 0x80, 0x3F])) for t in tensors]
        write_safetensors(folder / name, f32 + stale)
        wmap |= {t.name: name for t in f32 + stale}
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
    "baseline": lambda out: ["check", str(SEEDS), "--generate-baseline", out],
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


@pytest.mark.parametrize("command", sorted(WRITERS))
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
    assert tensor_bytes([str(out)]) == _fixed(index)
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
    assert _named(doc["weight_map"]) == {
        "a.weight": "s1/model.safetensors",
        "b.weight": "s2/model.safetensors",
    }
    with load_checkpoint(str(out / "model.safetensors.index.json")) as ck:
        assert not ck.diagnostics and len(ck.shards) == 2
    assert tensor_bytes([str(out)]) == _fixed(index)
    # and again, over the previous output
    assert main(["fix", str(index), "-o", str(out)]) == 0
    assert tensor_bytes([str(out / "model.safetensors.index.json")]) == _fixed(index)


def test_same_shard_name_given_as_files_keeps_the_layout(tmp_path: Path) -> None:
    for d, t in (("a", "x.weight"), ("b", "y.weight")):
        (tmp_path / d).mkdir()
        write_safetensors(
            tmp_path / d / "model.safetensors", [_f32(t), *stale_layer(f"{STALE}.{d}")]
        )
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
    assert _named(doc["weight_map"]) == {
        "x.weight": "a/model.safetensors",
        "y.weight": "b/model.safetensors",
    }


# -------------------------------------------------------------------- 3. SIGTERM, stale


@pytest.mark.parametrize("sharded", [False, True], ids=["one-file", "sharded"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_signal_mid_write_cleans_up_and_exits_128_plus_it(
    sig: int, sharded: bool, tmp_path: Path
) -> None:
    """SIGTERM, and SIGHUP (a closed terminal or ssh session: it left the staging folder,
    issue 21), unwind like Ctrl-C: every temp file and the staging folder go."""
    src = _slow_shards(tmp_path / "in")  # each shard has a fix: there is always a write
    if sharded:
        out = tmp_path / "out"
        args = ["fix", "--as-one", str(src / "a.safetensors"), str(src / "b.safetensors")]
    else:
        out = tmp_path / "out.safetensors"
        args = ["fix", str(src / "a.safetensors")]
    proc = _child(CHILD_SLOW, *args, "-o", str(out))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _temps(tmp_path):
        time.sleep(0.02)
    assert _temps(tmp_path), "the writer never started"
    time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err
    assert "terminated" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_stale_temps_of_dead_writers_go_live_and_foreign_ones_stay(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = temp_prefix("other.safetensors")
    stale = tmp_path / (mine.replace(f".{os.getpid()}.", f".{dead.pid}.") + "abc" + TMP_SUFFIX)
    live = tmp_path / (mine.replace(f".{os.getpid()}.", f".{os.getppid()}.") + "abc" + TMP_SUFFIX)
    foreign = tmp_path / f".other.safetensors.{dead.pid}.0badc0de.abc{TMP_SUFFIX}"
    for p in (stale, live, foreign):
        p.write_bytes(b"x")
    write_safetensors(tmp_path / "in.safetensors", [_f32("a.weight"), *stale_layer(STALE)])
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


# ----------------------------------------- 5. issue 21: every write site, one safe writer

SRC = ROOT / "src" / "quantcheck"
#: where a file may be created, replaced or renamed, and why
WRITE_SITES = {
    "io/atomic.py": "the one safe writer of a file",
    "io/outpath.py": "temp names, switching a folder, removing what a switch left",
    "io/writer.py": "fills the temp files and staged shards atomic/outpath made",
    "io/carry.py": "hard-links the files an output keeps into its staged folder",
    "io/build.py": "write_safetensors: an in-memory builder for tests and examples, no command",
    "cli/main.py": "points stdout at os.devnull after a closed pipe (no file is written)",
}


def _write_calls(path: Path) -> list[str]:
    """Calls in `path` that create, replace or rename a file."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        text = ast.unparse(node)
        if (
            (owner in ("os", "shutil") and name in ("replace", "rename", "renames", "link"))
            or (owner == "shutil" and name.startswith(("copy", "move")))
            or name in ("write_text", "write_bytes", "mkstemp", "NamedTemporaryFile")
            or (owner == "os" and name == "open" and ("O_WRONLY" in text or "O_RDWR" in text))
            or (
                name == "open"
                and owner in ("", "io")
                and any(
                    isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and set("wax+") & set(a.value)
                    for a in node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
                )
            )
        ):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {text[:80]}")
    return found


def test_every_file_is_written_through_the_safe_writer() -> None:
    """No module but the writer's own creates, replaces or renames a file: baselines, reports,
    report pages, outputs and indexes all go through io/atomic.py (issue 21 A)."""
    stray = [
        site
        for path in sorted(SRC.rglob("*.py"))
        if str(path.relative_to(SRC)) not in WRITE_SITES
        for site in _write_calls(path)
    ]
    assert stray == []
    assert _write_calls(SRC / "io" / "atomic.py")  # the scan sees writes where they are


def _socket(path: Path) -> Path:
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


def _special(kind: str, tmp_path: Path) -> Path:
    """A destination of `kind` in tmp_path: socket, folder, or a link to a FIFO/socket/device."""
    dest = tmp_path / "out.safetensors"
    if kind == "socket":
        return _socket(dest)
    if kind == "folder":
        dest.mkdir()
        return dest
    other = tmp_path / "thing"
    if kind == "link-to-fifo":
        os.mkfifo(other)
    elif kind == "link-to-socket":
        _socket(other)
    else:
        other = _device(tmp_path)
    os.symlink(other, dest)
    return dest


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.name, os.lstat(p).st_mode) for p in folder.iterdir())


#: writers whose -o names a file even when it is a folder (the others write into it)
ONE_FILE_ONLY = ("report", "baseline")


@pytest.mark.parametrize(
    "kind", ["socket", "folder", "link-to-fifo", "link-to-socket", "link-to-device"]
)
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_writer_refuses_non_regular_destinations(
    command: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "folder" and command not in ONE_FILE_ONLY:
        pytest.skip("fix/quantize/dequantize -o FOLDER write FOLDER/<input name>: not refused")
    dest = _special(kind, tmp_path)
    before = _listing(tmp_path)
    assert main(WRITERS[command](str(dest))) == 2
    err = capsys.readouterr().err
    assert err.startswith("quantcheck: error: ") and err.count("\n") == 1, err
    assert "nothing was written" in err or "give a file name" in err, err
    assert _listing(tmp_path) == before  # the node itself and no temp file


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_failed_replace_leaves_no_temp_file(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The last step fails (the destination became busy): exit 2, the old file untouched,
    no temp file of ours left (issue 21 A: `FILE.tmp<pid>` was left by --generate-baseline)."""
    dest = tmp_path / "out.safetensors"
    dest.write_bytes(b"old")

    def busy(src: object, dst: object) -> None:
        raise OSError(16, "Device or resource busy", str(dst))

    monkeypatch.setattr(os, "replace", busy)
    assert main(WRITERS[command](str(dest))) == 2
    assert "Device or resource busy" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.safetensors"]
    assert dest.read_bytes() == b"old"


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_writer_follows_a_symlink_to_a_regular_file(command: str, tmp_path: Path) -> None:
    disk, here = tmp_path / "disk", tmp_path / "here"
    disk.mkdir()
    here.mkdir()
    target = disk / "real.out"
    target.write_bytes(b"old")
    link = here / "out.safetensors"
    os.symlink(target, link)
    assert main(WRITERS[command](str(link))) in (0, 1)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert target.read_bytes() != b"old" and target.stat().st_size > 3
    assert sorted(p.name for p in here.iterdir()) == ["out.safetensors"]
    assert sorted(p.name for p in disk.iterdir()) == ["real.out"]


ROOT_ONLY = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="giving files to another owner needs root",
)


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_replacing_a_file_keeps_its_mode(command: str, tmp_path: Path, umask: None) -> None:
    """Issue 21 S: an existing 0600 output stays 0600 (was reset to 0666 & ~umask)."""
    dest = tmp_path / "out.safetensors"
    dest.write_bytes(b"old")
    dest.chmod(0o600)
    assert main(WRITERS[command](str(dest))) in (0, 1)
    assert dest.read_bytes() != b"old"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600


@ROOT_ONLY
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_replacing_a_file_keeps_its_owner_and_group(command: str, tmp_path: Path) -> None:
    """Issue 21 S: a file of nobody's stays nobody's when root rewrites it (was root:root,
    and its owner could no longer read it)."""
    dest = tmp_path / "out.safetensors"
    dest.write_bytes(b"old")
    dest.chmod(0o640)
    os.chown(dest, 65534, 65534)
    assert main(WRITERS[command](str(dest))) in (0, 1)
    st = dest.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)
    assert dest.read_bytes() != b"old"


# --------------------------------------------- 6. sharded rewrite: what folders keep (N)


def _acl(uid: int) -> bytes:
    """A POSIX access ACL (the kernel's xattr form) granting user `uid` read and execute."""
    import struct

    undefined = 0xFFFFFFFF
    entries = [(1, 7, undefined), (2, 5, uid), (4, 5, undefined), (0x10, 5, undefined)]
    entries.append((0x20, 0, undefined))
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


def _attrs(path: Path) -> dict[str, object]:
    st = os.stat(path)
    xattrs = {n: os.getxattr(path, n) for n in sorted(os.listxattr(path))}
    return {
        "owner": (st.st_uid, st.st_gid),
        "mode": stat.S_IMODE(st.st_mode),
        "xattrs": xattrs,
        "times": (st.st_atime_ns, st.st_mtime_ns),
    }


def _decorate(folder: Path, uid: int) -> None:
    """Owner, mode, an xattr, an ACL where the file system has them, old times."""
    if os.geteuid() == 0:
        os.chown(folder, uid, uid)
    folder.chmod(0o750)
    with contextlib.suppress(OSError):
        os.setxattr(folder, "user.note", b"mine")
    with contextlib.suppress(OSError):
        os.setxattr(folder, "system.posix_acl_access", _acl(uid))
    os.utime(folder, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))


def test_sharded_rewrite_keeps_what_folders_carried_over_had(tmp_path: Path) -> None:
    """Issue 21 N: `out/loras` 0750 nobody with an xattr and an ACL keeps all of it, times
    included; `out` itself and `out/s` (which hold new shards) keep all but their times."""
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "s/p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(out, {"p1.safetensors": ["old.a"], "s/p2.safetensors": ["old.b"]})
    (out / "loras").mkdir()
    (out / "loras" / "mine.safetensors").write_bytes(b"lora")
    for folder in (out / "loras", out / "s", out):
        _decorate(folder, 65534)
    (out / "s" / "p2.safetensors").chmod(0o600)  # a replaced shard keeps its mode too
    before = {f: _attrs(out / f) for f in ("loras", "s", "")}
    assert main(["fix", str(index), "-o", str(out)]) == 0
    assert stat.S_IMODE((out / "s" / "p2.safetensors").stat().st_mode) == 0o600
    assert (out / "loras" / "mine.safetensors").read_bytes() == b"lora"
    assert _attrs(out / "loras") == before["loras"]
    for f in ("s", ""):
        after = _attrs(out / f)
        assert {k: v for k, v in after.items() if k != "times"} == {
            k: v for k, v in before[f].items() if k != "times"
        }, f
    assert tensor_bytes([str(out)]) == _fixed(index)
    assert _temps(tmp_path) == []


# ----------------------------------------- 7. folders that cannot be renamed (EXDEV, V)


def _no_folder_renames(monkeypatch: pytest.MonkeyPatch) -> None:
    """What overlayfs does to a folder from a lower layer (the old output): renaming it, or
    exchanging it, fails with EXDEV. Folders we made (the staged one) rename fine."""
    real_rename = os.rename

    def rename(src: str, dst: str) -> None:
        if os.path.isdir(src) and not os.path.basename(src).endswith((TMP_SUFFIX, OLD_SUFFIX)):
            raise OSError(errno.EXDEV, "Invalid cross-device link", src)
        real_rename(src, dst)

    def exchange(a: str, b: str) -> bool:
        raise OSError(errno.EXDEV, "Invalid cross-device link", b)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(outpath, "_exchange", exchange)


def test_exdev_switches_file_by_file_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21 V: a sharded write into an existing folder on overlayfs succeeded never
    ("Invalid cross-device link"); now the files are replaced one by one, other files stay,
    the old output's own files it no longer names go, and one line says which promise holds."""
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "s/p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(
        out, {"p1.safetensors": ["old.a"], "s/p2.safetensors": ["old.b"], "p3.safetensors": ["c"]}
    )
    (out / "README.md").write_text("mine")
    _no_folder_renames(monkeypatch)
    assert main(["fix", str(index), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and outpath.PER_FILE_PROMISE in warnings[0], err
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "README.md",
        "model.safetensors.index.json",
        "p1.safetensors",
        "s",
        "s/p2.safetensors",
    ]
    assert tensor_bytes([str(out)]) == _fixed(index)
    assert (out / "README.md").read_text() == "mine"
    assert _temps(tmp_path) == []


def test_exdev_switch_failing_midway_puts_the_old_files_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    index = _sharded(
        tmp_path / "in",
        {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"], "n/p3.safetensors": ["c"]},
    )
    out = tmp_path / "out"
    _sharded(out, {"p1.safetensors": ["old.a"], "p2.safetensors": ["old.b"]})
    before = _snapshot(out)
    _no_folder_renames(monkeypatch)
    real_replace = os.replace

    def replace(src: str, dst: str) -> None:
        if os.path.basename(dst) == "p3.safetensors":
            raise OSError(errno.ENOSPC, "No space left on device", dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert main(["fix", str(index), "-o", str(out)]) == 2
    assert "the disk is full" in capsys.readouterr().err
    assert _snapshot(out) == before  # p1, p2 back, the new folder n/ gone
    assert _temps(tmp_path) == []


# -------------------------------- 8. what the old output leaves behind is named (leftover)


def _chattr(flag: str, path: Path) -> bool:
    exe = shutil.which("chattr")
    if exe is None:
        return False
    return subprocess.run([exe, flag, str(path)], capture_output=True, check=False).returncode == 0


@ROOT_ONLY
@pytest.mark.skipif(shutil.which("chattr") is None, reason="needs chattr (e2fsprogs)")
def test_an_old_file_that_cannot_be_removed_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old output folder holds an immutable shard: the switch succeeds, and a warning
    says which file was left and where (it stayed for ever without a word)."""
    index = _sharded(
        tmp_path / "in", {"p1.safetensors": ["a.weight"], "p2.safetensors": ["b.weight"]}
    )
    out = tmp_path / "out"
    _sharded(out, {"p1.safetensors": ["old.a"], "p2.safetensors": ["old.b"]})
    stuck = out / "p2.safetensors"
    if not _chattr("+i", stuck):
        pytest.skip("this file system does not take the immutable flag")
    left: list[Path] = []
    try:
        assert main(["fix", str(index), "-o", str(out)]) == 0
        err = capsys.readouterr().err
        assert tensor_bytes([str(out)]) == _fixed(index)
        left = [tmp_path / n for n in _temps(tmp_path)]
        assert len(left) == 1 and sorted(p.name for p in left[0].iterdir()) == ["p2.safetensors"]
        warning = [line for line in err.splitlines() if "warning" in line]
        assert len(warning) == 1, err
        assert "p2.safetensors" in warning[0] and str(left[0]) in warning[0]
        assert "Operation not permitted" in warning[0]
        # the next run writing into that folder tries again, and says again what is left
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        earlier = left[0].with_name(left[0].name.replace(f".{os.getpid()}.", f".{dead.pid}."))
        left[0].rename(earlier)
        left = [earlier]
        assert main(["fix", str(index), "-o", str(tmp_path / "other")]) == 0
        again = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
        assert len(again) == 1 and str(left[0]) in again[0], again
    finally:
        for folder in [*left, out]:
            _chattr("-i", folder / "p2.safetensors")


# ------------------------------------------------- 9. slow shards (for the signal tests)


def _slow_shards(folder: Path) -> Path:
    """Two shards of 4 MiB (slow to write under CHILD_SLOW), each with a stale marker on a
    16-bit weight that `fix` removes (so there is something to write)."""
    folder.mkdir()
    blob = bytes(range(256)) * (4 * 4096)
    for n in ("a", "b"):
        write_safetensors(
            folder / f"{n}.safetensors",
            [
                RawTensor(f"{n}.blob", "U8", (len(blob),), blob),
                *stale_layer(f"{STALE}.{n}"),
            ],
        )
    return folder


# ------------------------------------------------------ 10. names that are not UTF-8 (I)

BAD = os.fsdecode(b"m\xff")  # a lone surrogate in Python: what Linux allows in a file name


def _bad_shards(folder: Path, command: str) -> Path:
    """Two shards named `m\\xff-0000N-of-00002.safetensors`, with what `command` works on."""
    from ._real import plain, quantized, weight

    folder.mkdir()
    for i in (1, 2):
        w = weight(64, 64, seed=i)
        if command == "dequantize":
            layer = quantized(f"blocks.{i}.attn.qkv", w, "float8_e4m3fn")
        elif command == "quantize":
            layer = plain(f"blocks.{i}.attn.qkv", w)
        else:  # a stale marker on a 16-bit weight: fix removes it
            layer = plain(f"blocks.{i}.attn.qkv", w)
            layer += quantized(f"blocks.{i}.attn.qkv", w, "float8_e4m3fn")[-1:]
        write_safetensors(folder / f"{BAD}-0000{i}-of-00002.safetensors", layer)
    return folder


@pytest.mark.parametrize("command", ["fix", "quantize", "dequantize"])
def test_shard_names_that_are_not_utf8_are_escaped_in_the_index(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21 I: writing the index crashed (UnicodeEncodeError, exit 1). Decision: the
    index names such a shard with a `\\udcXX` JSON escape: valid UTF-8 JSON, which Python
    readers (quantcheck, transformers, diffusers) turn back into the same file name."""
    src, out = _bad_shards(tmp_path / "in", command), tmp_path / "out"
    extra = ["--to", "float8_e4m3fn"] if command == "quantize" else []
    assert main([command, str(src), "-o", str(out), *extra]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err
    raw = (out / "model.safetensors.index.json").read_bytes()
    raw.decode("utf-8")  # strictly valid UTF-8
    assert b"m\\udcff-00001-of-00002.safetensors" in raw
    names = set(json.loads(raw)["weight_map"].values())
    assert names == {f"{BAD}-0000{i}-of-00002.safetensors" for i in (1, 2)}
    with load_checkpoint(str(out / "model.safetensors.index.json")) as ck:
        assert not [d for d in ck.diagnostics if d.code.startswith("QC5")]
        assert len(ck.shards) == 2
    assert _temps(tmp_path) == []


def test_baseline_of_names_that_are_not_utf8_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21 I: --generate-baseline crashed and left its temp file."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(SEEDS, tmp_path / f"{BAD}.safetensors")
    assert main(["check", ".", "--generate-baseline", "b.json"]) == 0
    raw = (tmp_path / "b.json").read_bytes()
    raw.decode("utf-8")
    assert b'"m\\udcff.safetensors"' in raw
    capsys.readouterr()
    assert main(["check", ".", "--baseline", "b.json"]) == 0
    assert "known findings suppressed" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{BAD}.safetensors", "b.json"])


@pytest.mark.parametrize("page", ["index.html", "0001-broken_seeds.safetensors.html"])
def test_report_pages_go_through_the_safe_writer(
    page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page of a many-checkpoint report whose place holds a FIFO: refused, the FIFO kept,
    no temp file left."""
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(SEEDS, models)
    shutil.copy(NVFP4, models)
    out = tmp_path / "report"
    out.mkdir()
    os.mkfifo(out / page)
    assert main(["report", str(models), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "FIFO" in err and err.count("\n") == 1, err
    assert stat.S_ISFIFO(os.lstat(out / page).st_mode)
    assert _temps(out) == [] and _temps(tmp_path) == []


def test_replacing_a_setuid_file_drops_the_set_id_bits(tmp_path: Path) -> None:
    """New contents never inherit a privilege: rwx bits are kept, set-user/group-id are not."""
    dest = tmp_path / "out.safetensors"
    dest.write_bytes(b"old")
    dest.chmod(0o6750)
    assert main(WRITERS["fix"](str(dest))) in (0, 1)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o750
