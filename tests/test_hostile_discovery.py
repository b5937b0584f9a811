"""Hostile command lines and folders for the one discovery every command uses
(`quantcheck.model.discover`): `--target` spellings, symlinked folders and link loops, Hugging
Face cache snapshots, unreadable index files, checkpoints only in a subfolder, shard names
that claim too many members."""

from __future__ import annotations

import argparse
import json
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


@pytest.mark.parametrize("command", [*CORE_COMMANDS, *EXTRA_COMMANDS])
@pytest.mark.parametrize("spelling", [" sglang", "sglang ", "\tsglang\n", " sglang , comfyui,"])
def test_every_target_option_is_stripped_where_parsed(command: str, spelling: str) -> None:
    """Whatever command takes `--target` hands on one spelling: the value is stripped where
    the argument is parsed, never used as typed (nothing downstream strips it again)."""
    action = _target_action(command)
    if action is None:
        return  # this command has no --target
    assert callable(action.type)
    want = "sglang,comfyui" if "comfyui" in spelling else "sglang"
    assert action.type(spelling) == want


def test_commands_with_target_are_the_expected_ones() -> None:
    """The loop above is not vacuous: these commands do take `--target`."""
    has = {c for c in [*CORE_COMMANDS, *EXTRA_COMMANDS] if _target_action(c) is not None}
    assert {"check", "fix", "quantize", "report"} <= has


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
    assert rc == 0 and "0 fixes" not in want
    rc, got, _ = run(
        capsys, "fix", "--dry-run", "--target", spelling, src, "-o", str(tmp_path / "b.safetensors")
    )
    assert rc == 0 and got.replace("b.safetensors", "a.safetensors") == want  # was: 0 fixes


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
    import os

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
