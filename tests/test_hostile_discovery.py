"""Hostile command lines and folders for the one discovery every command uses
(`quantcheck.model.discover`): `--target` spellings, symlinked folders and link loops, Hugging
Face cache snapshots, unreadable index files, checkpoints only in a subfolder, shard names
that claim too many members."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from quantcheck.cli.commands import EXTRA_COMMANDS
from quantcheck.cli.main import CORE_COMMANDS, build_parser, main

BROKEN = "broken_seeds.safetensors"
CLEAN = "nvfp4.safetensors"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------------- --target (H)


def _target_action(command: str) -> argparse.Action | None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next((a for a in sub.choices[command]._actions if "--target" in a.option_strings), None)


@pytest.mark.parametrize("spelling", [" sglang", "sglang ", "\tsglang\n", " sglang , comfyui,"])
def test_every_target_option_is_stripped_where_parsed(spelling: str) -> None:
    """Whatever command takes `--target` hands on one spelling: the value is stripped where
    the argument is parsed, never used as typed (nothing downstream strips it again). A
    command added later with a `--target` is covered by the same loop."""
    want = "sglang,comfyui" if "comfyui" in spelling else "sglang"
    seen = set()
    for command in [*CORE_COMMANDS, *EXTRA_COMMANDS]:
        action = _target_action(command)
        if action is not None:
            assert callable(action.type), command
            assert action.type(spelling) == want, command
            seen.add(command)
    assert {"check", "fix", "quantize", "report"} <= seen  # the loop is not vacuous


@pytest.mark.parametrize("spelling", [" ", ",", " , "])
def test_blank_target_is_refused(spelling: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--target", spelling, "x.safetensors"])
    assert exc.value.code == 2 and "unknown target ''" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", [" sglang", "sglang "])
def test_check_with_padded_target_is_the_same_check(
    spelling: str, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = run(
        capsys, "check", "--output-format", "json", "--target", "sglang", str(examples_dir / BROKEN)
    )
    got = run(
        capsys, "check", "--output-format", "json", "--target", spelling, str(examples_dir / BROKEN)
    )
    assert got == want and want[0] == 1  # was: KeyError, a crash
    assert list(json.loads(got[1])["targets"]) == ["sglang"]


@pytest.mark.parametrize("spelling", [" sglang", "sglang "])
def test_fix_with_padded_target_repairs(
    spelling: str, examples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = str(examples_dir / BROKEN)
    rc, want, _ = run(
        capsys, "fix", "--dry-run", "--target", "sglang", src, "-o", str(tmp_path / "a.safetensors")
    )
    # 1: the repaired INT8 file still cannot load through sglang's --transformer-weights-path
    # loader (QC631), which no fix changes
    assert rc == 1 and "0 fixes" not in want
    rc, got, _ = run(
        capsys, "fix", "--dry-run", "--target", spelling, src, "-o", str(tmp_path / "b.safetensors")
    )
    assert rc == 1 and got.replace("b.safetensors", "a.safetensors") == want  # was: 0 fixes


@pytest.mark.parametrize("spelling", [" sglang", "sglang "])
def test_quantize_and_report_with_padded_target_run(
    spelling: str, examples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from quantcheck.io.build import RawTensor, write_safetensors

    plain = tmp_path / "plain.safetensors"
    write_safetensors(
        plain, [RawTensor("blocks.0.attn.qkv.weight", "BF16", (128, 128), b"\x80\x3f" * 128 * 128)]
    )  # all 1.0
    out = tmp_path / "q.safetensors"
    rc, _, err = run(
        capsys,
        "quantize",
        str(plain),
        "-o",
        str(out),
        "--to",
        "float8_e4m3fn",
        "--target",
        spelling,
    )
    assert rc == 0 and out.is_file(), err  # was: KeyError, a crash
    page = tmp_path / "r.html"
    rc, _, err = run(
        capsys, "report", str(examples_dir / CLEAN), "-o", str(page), "--target", spelling
    )
    assert rc in (0, 1) and page.is_file(), err


# --------------------------------------------------------------------------- shard-set names (L)


def _one_tensor_file(path: Path, kib: int = 120) -> None:
    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    n = kib * 1024
    write_safetensors(
        path,
        [
            RawTensor("blocks.0.attn.weight", "F8_E4M3", (n // 64, 64), bytes(n)),
            RawTensor("blocks.0.attn.weight_scale", "F32", (), bytes(4)),
            marker_tensor("blocks.0.attn", {"format": "float8_e4m3fn"}),
        ],
    )


def test_huge_claimed_shard_set_is_one_bounded_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One 120 KB file named `x-00001-of-99999.safetensors`: one QC506 naming 8 missing
    members and the count (was 99,998 findings), and the work is bounded by the files there
    (the folder is listed once; no file is looked for per missing name)."""

    from quantcheck.model import shard_sets

    _one_tensor_file(tmp_path / "x-00001-of-99999.safetensors")
    looked: list[str] = []
    real_exists = os.path.exists
    monkeypatch.setattr(shard_sets.os.path, "exists", lambda p: looked.append(p) or real_exists(p))
    rc, out, err = run(capsys, "check", "--output-format", "json", str(tmp_path))
    doc = json.loads(out)
    found = [d for d in doc["diagnostics"] if d["code"] == "QC506"]
    assert rc == 1 and len(found) == 1, err
    msg = found[0]["message"]
    assert msg.startswith("99,998 of the 99,999 members of this shard set are missing")
    named = [f"x-{i:05d}-of-99999.safetensors" for i in range(2, 10)]
    assert msg.endswith(", ".join(named) + ", and 99,990 more")
    assert "x-00010-of-99999" not in msg
    asked = [p for p in looked if "-of-99999" in p]
    assert len(asked) <= 1  # only the file itself, never one stat per missing member


def test_many_huge_sets_give_one_finding_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """51 such sets: 51 findings (was 5.1M, a 1.38 GB JSON document); a set with a few
    members present names the first missing ones in part order."""
    for i in range(50):
        _one_tensor_file(tmp_path / f"m{i:02d}-00001-of-99999.safetensors", kib=1)
    for part in (1, 2, 4):
        _one_tensor_file(tmp_path / f"gap-{part:05d}-of-00012.safetensors", kib=1)
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(tmp_path))
    doc = json.loads(out)
    found = [d for d in doc["diagnostics"] if d["code"] == "QC506"]
    assert rc == 1 and len(found) == 51 and len(out) < 400_000
    gap = next(d["message"] for d in found if "gap-" in d["message"])
    assert gap.startswith("9 of the 12 members")
    assert "gap-00003-of-00012.safetensors, gap-00005-of-00012.safetensors" in gap
    assert gap.endswith("gap-00011-of-00012.safetensors, and 1 more")


def test_set_missing_one_member_keeps_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for part in (1, 3):
        _one_tensor_file(tmp_path / f"m-{part:05d}-of-00003.safetensors", kib=1)
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(tmp_path))
    (found,) = [d for d in json.loads(out)["diagnostics"] if d["code"] == "QC506"]
    assert rc == 1
    assert found["message"] == (
        "m-00002-of-00003.safetensors of this shard set is missing (no index names the set)"
    )


# --------------------------------------------------------------------------- symlinked folders (E)


def _names(root: Path, *args: Path) -> list[str]:
    """What discovery finds in `args` (default: `root`), named relative to `root`."""
    from quantcheck.model.discover import discover

    specs = discover([str(a) for a in args or (root,)])
    return [Path(s.name).relative_to(root).as_posix() for s in specs]


@pytest.fixture
def models(tmp_path: Path, examples_dir: Path) -> Path:
    """`models/` with one clean file; `models/diffusion_models/flux` links to a folder on
    another "disk" that holds a broken checkpoint."""
    root = tmp_path / "models"
    (root / "diffusion_models").mkdir(parents=True)
    shutil.copy(examples_dir / CLEAN, root / CLEAN)
    disk = tmp_path / "bigdisk" / "flux"
    disk.mkdir(parents=True)
    shutil.copy(examples_dir / BROKEN, disk / BROKEN)
    (root / "diffusion_models" / "flux").symlink_to(disk)
    return root


def test_symlinked_subfolder_is_scanned(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _names(models) == [f"diffusion_models/flux/{BROKEN}", CLEAN]
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(models))
    assert rc == 1 and len(json.loads(out)["checkpoints"]) == 2  # was: 1 checkpoint, exit 0


def test_link_loops_end_and_each_file_is_listed_once(models: Path) -> None:
    """Links back to the folder, to a folder above it, between siblings and in a cycle: the
    scan ends, each real file once (device and inode of every folder visited)."""
    (models / "again").symlink_to(models)  # the folder itself
    (models / "diffusion_models" / "up").symlink_to(models.parent)  # above it
    (models / "a").mkdir()
    (models / "b").mkdir()
    (models / "a" / "to_b").symlink_to(models / "b")
    (models / "b" / "to_a").symlink_to(models / "a")  # a -> b -> a
    shutil.copy(models / CLEAN, models / "b" / "inner.safetensors")
    assert _names(models) == [
        "a/to_b/inner.safetensors",  # b is first reached as a/to_b ("a/to_b/" < "b/")
        f"diffusion_models/flux/{BROKEN}",
        CLEAN,
    ]


def test_file_under_two_paths_is_named_by_the_first_in_sorted_order(models: Path) -> None:
    """Two links to one file, and one real folder under two names: each real file once,
    under the first of its paths in sorted order, whether that path is the link or not."""
    (models / "zz").mkdir()
    shutil.copy(models / CLEAN, models / "zz" / "real.safetensors")
    (models / "aa-link.safetensors").symlink_to(models / "zz" / "real.safetensors")
    (models / "zz" / "the-link.safetensors").symlink_to(models / CLEAN)
    (models / "mirror").symlink_to(models / "diffusion_models")  # "diffusion_models/" first
    assert _names(models) == [
        "aa-link.safetensors",  # not zz/real.safetensors: the link sorts first
        f"diffusion_models/flux/{BROKEN}",  # not mirror/flux/...
        CLEAN,  # not zz/the-link.safetensors
    ]


def test_dangling_and_unlistable_folders_are_passed_over(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from quantcheck.model import discover

    (models / "gone").symlink_to(models / "nowhere")  # dangling: an entry, not a folder
    (models / "locked").mkdir()
    shutil.copy(models / CLEAN, models / "locked" / "x.safetensors")
    (models / ".cache").mkdir()
    shutil.copy(models / CLEAN, models / ".cache" / "x.safetensors")  # hidden: skipped
    real = os.scandir

    def scandir(path: str) -> object:
        if os.path.basename(path) == "locked":  # EACCES; root could read it anyway
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(discover.os, "scandir", scandir)
    assert _names(models) == [f"diffusion_models/flux/{BROKEN}", CLEAN]


# --------------------------------------------------------------------------- Hugging Face cache (F)


def hf_cache(tmp_path: Path, examples_dir: Path) -> Path:
    """What `hf download acme/flux` leaves: `models--acme--flux/blobs/<sha256>` holds the
    bytes, `snapshots/<rev>/<name>` are relative symlinks `../../blobs/<sha256>`, `refs/main`
    names the revision. Returns the cache root (`~/.cache/huggingface/hub`)."""
    import hashlib

    from remote._files import split_example

    hub = tmp_path / "hub"
    repo = hub / "models--acme--flux"
    rev = "0123456789abcdef0123456789abcdef01234567"
    work = tmp_path / "download"
    work.mkdir()
    split_example(examples_dir / CLEAN, work)
    (work / "config.json").write_text("{}")
    for sub in ("blobs", f"snapshots/{rev}", "refs"):
        (repo / sub).mkdir(parents=True)
    (repo / "refs" / "main").write_text(rev)
    for f in sorted(work.iterdir()):
        blob = hashlib.sha256(f.read_bytes()).hexdigest()
        f.rename(repo / "blobs" / blob)
        (repo / "snapshots" / rev / f.name).symlink_to(f"../../blobs/{blob}")
    (hub / ".locks" / "models--acme--flux").mkdir(parents=True)
    return hub


SNAPSHOT = "models--acme--flux/snapshots/0123456789abcdef0123456789abcdef01234567"
INDEX = f"{SNAPSHOT}/model.safetensors.index.json"


@pytest.mark.parametrize("where", ["cache", "repo", "snapshot", "index"])
def test_hf_cache_snapshot_checks_clean(
    where: str, tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every shard is a symlink into ../../blobs/: resolved by name within the snapshot, the
    index's shards are its members (was: QC502 for each), not a second shard set."""
    hub = hf_cache(tmp_path, examples_dir)
    arg = {
        "cache": hub,
        "repo": hub / "models--acme--flux",
        "snapshot": hub / SNAPSHOT,
        "index": hub / INDEX,
    }[where]
    assert _names(hub, arg) == [INDEX]
    rc, out, err = run(capsys, "check", "--output-format", "json", str(arg))
    doc = json.loads(out)
    assert [c["name"] for c in doc["checkpoints"]] == [str(hub / INDEX)], err
    # only sglang's loader that cannot load NVFP4 (--comfyui-mode: QC636, QC637) says anything,
    # in notes: it does not read this file (rules/sglang/loaders.py)
    assert rc == 0 and {d["code"] for d in doc["diagnostics"]} == {"QC636", "QC637"}, doc
    assert all(d["loaders"] == ["comfyui-mode"] for d in doc["diagnostics"])
    assert all(d["decides"] is False and d["severity"] == "info" for d in doc["diagnostics"])
    assert [Path(i["path"]).name for i in doc["checkpoints"][0]["inputs"]] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]


def test_hf_cache_snapshot_inspects_and_fixes(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub = hf_cache(tmp_path, examples_dir)
    rc, out, _ = run(capsys, "inspect", "--output-format", "json", str(hub / SNAPSHOT))
    assert rc == 0 and json.loads(out)["layers"]
    rc, out, err = run(capsys, "fix", "--dry-run", str(hub / SNAPSHOT))
    assert rc == 0 and "QC502" not in out + err


# --------------------------------------------------------------------------- unreadable index (G)


def _bad_index_folder(tmp_path: Path, examples_dir: Path, how: str, mp: pytest.MonkeyPatch) -> Path:
    """A folder with a clean file, a sharded checkpoint and one `bad.safetensors.index.json`
    that cannot be read: a dangling link, a FIFO, EACCES, or deleted between listing and
    reading."""

    from quantcheck.model import discover, shard_sets

    root = tmp_path / "models"
    (root / "sharded").mkdir(parents=True)
    shutil.copy(examples_dir / CLEAN, root / CLEAN)
    from remote._files import split_example

    split_example(examples_dir / "fp8_e4m3fn.safetensors", root / "sharded")
    bad = root / "bad.safetensors.index.json"
    if how == "dangling":
        bad.symlink_to(root / "nowhere.json")
    elif how == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(bad)
    elif how == "eacces":  # chmod does not stop root: the read itself is refused
        bad.write_text("{}")
        real = shard_sets.local_doc

        def refused(path: str) -> object:
            if path.endswith("bad.safetensors.index.json"):
                raise PermissionError(13, "Permission denied", path)
            return real(path)

        mp.setattr(shard_sets, "local_doc", refused)
    else:  # deleted mid-scan: listed, then gone before it is read
        bad.write_text("{}")
        walk = discover._walk

        def then_deleted(top: str) -> object:
            yield from walk(top)
            bad.unlink(missing_ok=True)

        mp.setattr(discover, "_walk", then_deleted)
    return root


@pytest.mark.parametrize("how", ["dangling", "fifo", "eacces", "deleted"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_unreadable_index_is_one_unreadable_row(
    how: str,
    fmt: str,
    tmp_path: Path,
    examples_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The unreadable index is a row like any unreadable checkpoint; the rest of the folder
    is reported; the exit code is the worst, 2 for that row (was: the whole folder aborted
    with one `[Errno 2]` line and no table)."""
    root = _bad_index_folder(tmp_path, examples_dir, how, monkeypatch)
    rc, out, err = run(capsys, "check", "--no-color", "--output-format", fmt, str(root))
    assert rc == 2
    assert "bad.safetensors.index.json" in err  # the reason, on stderr
    if fmt == "json":
        rows = {
            Path(c["name"]).relative_to(root).as_posix(): c for c in json.loads(out)["checkpoints"]
        }
        assert sorted(rows) == [
            "bad.safetensors.index.json",
            CLEAN,
            "sharded/model.safetensors.index.json",
        ]
        assert rows["bad.safetensors.index.json"]["kind"] == "unreadable"
        assert rows["bad.safetensors.index.json"]["error"]
        assert {rows[k]["kind"] for k in rows if k.startswith(("nv", "sh"))} == {"checked"}
    else:
        table = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(str(root))}
        assert table[str(root / "bad.safetensors.index.json")].split()[-2:] == [
            "unreadable",
            "unreadable",
        ]
        # sglang: --transformer-weights-path infers NVFP4 (--comfyui-mode, which cannot, does
        # not read this file)
        assert table[str(root / CLEAN)].split()[-2:] == ["ok", "ok"]
        assert str(root / "sharded" / "model.safetensors.index.json") in table
        assert out.splitlines()[-1].startswith("3 checkpoints:")


def test_unreadable_index_given_with_its_shards(
    tmp_path: Path,
    examples_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Given on the command line beside other files (pre-commit passes the staged files),
    an unreadable index claims nothing and is an unreadable row."""
    root = _bad_index_folder(tmp_path, examples_dir, "dangling", monkeypatch)
    rc, out, _ = run(
        capsys,
        "check",
        "--output-format",
        "json",
        str(root / "bad.safetensors.index.json"),
        str(root / CLEAN),
    )
    kinds = [c["kind"] for c in json.loads(out)["checkpoints"]]
    assert rc == 2 and kinds == ["unreadable", "checked"]


# --------------------------------------------------------------------------- `..` in an index (O)


def test_index_in_subfolder_naming_parent_file_does_not_claim_it(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sub/x.safetensors.index.json` naming `../X.safetensors`: the index gets QC502 and X is
    checked as a checkpoint of its own (the same in a hub listing: tests/remote)."""
    from quantcheck.model.discover import group
    from quantcheck.model.shard_sets import index_member

    (tmp_path / "sub").mkdir()
    shutil.copy(examples_dir / BROKEN, tmp_path / BROKEN)
    doc = {"weight_map": {"a.weight": f"../{BROKEN}"}}
    (tmp_path / "sub" / "x.safetensors.index.json").write_text(json.dumps(doc))
    assert _names(tmp_path) == [BROKEN, "sub/x.safetensors.index.json"]
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(tmp_path))
    codes = {(Path(d["checkpoint"]).name, d["code"]) for d in json.loads(out)["diagnostics"]}
    assert ("x.safetensors.index.json", "QC502") in codes
    assert (BROKEN, "QC305") in codes and rc == 1
    # the one rule, as a pure function over a listing
    listing = [BROKEN, "sub/x.safetensors.index.json"]
    members = {"sub/x.safetensors.index.json": [f"../{BROKEN}"]}
    specs = group(
        listing,
        lambda idx: [m for n in members[idx] if (m := index_member(idx, n)) is not None],
        lambda rel: rel,
    )
    assert [s.name for s in specs] == listing


@pytest.mark.parametrize(
    ("shard", "member"),
    [
        ("a.safetensors", "sub/a.safetensors"),
        ("./a.safetensors", "sub/a.safetensors"),
        ("deeper/a.safetensors", "sub/deeper/a.safetensors"),
        ("..a.safetensors", "sub/..a.safetensors"),  # a name, not a step up
        ("../a.safetensors", None),
        ("deeper/../a.safetensors", None),  # through a linked folder `..` goes anywhere
        ("..\\a.safetensors", None),
        ("/abs/a.safetensors", None),
        ("\\abs\\a.safetensors", None),
        ("C:a.safetensors", None),
        ("", None),
        (".", None),
    ],
)
def test_index_member_is_by_name(shard: str, member: str | None) -> None:
    from quantcheck.model.shard_sets import index_member

    assert index_member("sub/m.safetensors.index.json", shard) == member


# --------------------------------------------------------------------------- one discovery (M)


def _diffusers(root: Path, src: Path, name: str = "diffusion_pytorch_model.safetensors") -> Path:
    """A diffusers-style folder: the only checkpoint in `transformer/`, JSON beside it."""
    (root / "transformer").mkdir(parents=True)
    (root / "model_index.json").write_text("{}")
    (root / "transformer" / "config.json").write_text("{}")
    shutil.copy(src, root / "transformer" / name)
    return root


def test_every_command_finds_the_checkpoint_in_a_subfolder(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fix, quantize, dequantize, compare, report and inspect of a folder whose only checkpoint
    is in `transformer/` find it, as check does (was: "folder holds no .safetensors files")."""
    from quantcheck.io.build import RawTensor, write_safetensors

    broken = _diffusers(tmp_path / "broken", examples_dir / BROKEN)
    quant = _diffusers(tmp_path / "quant", examples_dir / CLEAN)
    plain_file = tmp_path / "plain.safetensors"
    write_safetensors(
        plain_file,
        [RawTensor("blocks.0.attn.qkv.weight", "BF16", (128, 128), b"\x80\x3f" * 128 * 128)],
    )
    plain = _diffusers(tmp_path / "plain", plain_file)
    out = tmp_path / "out"
    out.mkdir()

    rc, _, err = run(capsys, "check", str(broken))
    assert rc == 1, err
    rc, _, err = run(capsys, "fix", str(broken), "-o", str(out / "fixed.safetensors"))
    # 1: the fixed INT8 file cannot load through sglang's --transformer-weights-path (QC631)
    assert rc == 1 and (out / "fixed.safetensors").is_file(), err
    rc, _, err = run(
        capsys, "quantize", str(plain), "-o", str(out / "q.safetensors"), "--to", "float8_e4m3fn"
    )
    assert rc == 0 and (out / "q.safetensors").is_file(), err
    rc, _, err = run(capsys, "dequantize", str(quant), "-o", str(out / "deq.safetensors"))
    assert rc == 0 and (out / "deq.safetensors").is_file(), err
    original = _diffusers(tmp_path / "original", out / "deq.safetensors")
    rc, text, err = run(capsys, "compare", "--output-format", "json", str(quant), str(original))
    assert rc == 0 and json.loads(text)["layers"], err
    rc, _, err = run(
        capsys, "report", str(quant), "-o", str(out / "r.html"), "--compare", str(original)
    )
    assert rc == 0 and (out / "r.html").is_file(), err
    rc, _, err = run(capsys, "report", str(quant), "-o", str(out / "r2.html"))
    assert rc == 0 and (out / "r2.html").is_file(), err
    rc, text, err = run(capsys, "inspect", "--output-format", "json", str(quant))
    assert rc == 0 and json.loads(text)["layers"], err


def test_commands_taking_one_checkpoint_refuse_a_folder_of_several(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _diffusers(tmp_path / "m", examples_dir / CLEAN)
    shutil.copy(examples_dir / CLEAN, root / "transformer" / "other.safetensors")
    for argv in (
        ["fix", str(root), "-o", str(tmp_path / "x.safetensors")],
        ["dequantize", str(root), "-o", str(tmp_path / "x.safetensors")],
        ["compare", str(root), str(root / "transformer" / "other.safetensors")],
    ):
        rc, _, err = run(capsys, *argv)
        assert rc == 2 and "one checkpoint, but the arguments name 2 checkpoints" in err, argv


def test_hf_cache_revisions_sharing_an_index_blob_are_two_checkpoints(
    tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second revision whose index.json is byte-identical (one blob) but whose first shard
    changed: both revisions are checked (each index's names resolve in its own snapshot);
    the shared blob is not "one real file reported once"."""
    hub = hf_cache(tmp_path, examples_dir)
    old = hub / SNAPSHOT
    new = old.parent / ("f" * 40)
    new.mkdir()
    for link in sorted(old.iterdir()):
        (new / link.name).symlink_to(os.readlink(link))
    first = new / "model-00001-of-00002.safetensors"
    changed = hub / "models--acme--flux" / "blobs" / ("e" * 64)
    shutil.copy(examples_dir / BROKEN, changed)
    first.unlink()
    first.symlink_to(f"../../blobs/{changed.name}")
    assert _names(hub) == [INDEX, f"{new.relative_to(hub)}/model.safetensors.index.json"]
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(hub))
    assert rc == 1 and len(json.loads(out)["checkpoints"]) == 2
