"""Hostile command lines and folders for the one discovery every command uses
(`quantcheck.model.discover`): `--target` spellings, symlinked folders and link loops, Hugging
Face cache snapshots, unreadable index files, checkpoints only in a subfolder, shard names
that claim too many members."""

from __future__ import annotations

import argparse
import json
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
