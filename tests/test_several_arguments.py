"""Several checkpoint arguments outside `check`: `inspect` reads them as `check` does (one
section per checkpoint, `--as-one` for the shards-of-one reading); `fix`, `quantize` and
`dequantize`, which write one output, refuse several unrelated checkpoints (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.io.build import RawTensor, write_safetensors

A, B = "nvfp4.safetensors", "mxfp8.safetensors"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def two(tmp_path: Path, examples_dir: Path) -> list[str]:
    for name in (A, B):
        shutil.copy(examples_dir / name, tmp_path / name)
    return [str(tmp_path / A), str(tmp_path / B)]


def test_inspect_two_files_is_two_sections(
    two: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(capsys, "inspect", *two)
    assert rc == 0, err
    assert out.count("\n== ") + out.startswith("== ") == 2
    assert f"== {two[0]} ==" in out and f"== {two[1]} ==" in out
    assert out.rstrip().endswith("2 checkpoints")
    # each section holds its own checkpoint only: one format per section, not both
    first, second = out.split(f"== {two[1]} ==")
    assert "nvfp4" in first and "mxfp8" not in first
    assert "mxfp8" in second and "nvfp4" not in second


def test_inspect_json_lists_checkpoints(two: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "inspect", "--output-format", "json", *two)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "inspect" and doc["schema_version"] == 1
    assert [c["name"] for c in doc["checkpoints"]] == two
    assert [list(c["totals"]) for c in doc["checkpoints"]] == [
        ["nvfp4", "unquantized BF16"],
        ["mxfp8", "unquantized BF16"],
    ]
    for c, path in zip(doc["checkpoints"], two, strict=True):
        assert c["error"] is None and [f["path"] for f in c["files"]] == [path]
        _, one, _ = run(capsys, "inspect", "--output-format", "json", path)
        head = ("schema_version", "tool", "tool_version", "kind")  # the document's only
        assert not set(head) & set(c)
        assert {k: v for k, v in c.items() if k not in ("name", "error")} == {
            k: v for k, v in json.loads(one).items() if k not in head
        }


def test_inspect_names_an_unreadable_checkpoint_once(
    two: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dangling = tmp_path / "gone.safetensors"
    dangling.symlink_to(tmp_path / "nowhere")
    rc, _, err = run(capsys, "inspect", "--summary", str(tmp_path))
    assert rc == 2
    (line,) = [ln for ln in err.splitlines() if "gone.safetensors" in ln]
    assert line.count("gone.safetensors") == 1, line


def test_inspect_as_one_keeps_the_shards_reading(
    two: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(capsys, "inspect", "--output-format", "json", "--as-one", *two)
    assert rc == 0, err
    doc = json.loads(out)
    assert "checkpoints" not in doc
    assert [f["path"] for f in doc["files"]] == two
    assert doc["inputs"] == two


def test_inspect_folder_is_one_section_per_checkpoint(
    examples_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(capsys, "inspect", "--output-format", "json", str(examples_dir))
    assert rc == 0, err
    names = [c["name"] for c in json.loads(out)["checkpoints"]]
    assert names == sorted(str(p) for p in examples_dir.rglob("*.safetensors"))
    rc, out, _ = run(
        capsys, "inspect", "--output-format", "json", "--include", A, str(examples_dir)
    )
    assert rc == 0 and "checkpoints" not in json.loads(out)  # one found: printed as before


def test_inspect_one_file_prints_as_before(
    two: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run(capsys, "inspect", two[0])
    assert rc == 0 and not out.startswith("==") and "checkpoints" not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["fix", "-o", "OUT"],
        ["fix", "--dry-run"],
        ["quantize", "--to", "float8_e4m3fn", "-o", "OUT"],
        ["dequantize", "-o", "OUT"],
    ],
)
def test_one_output_commands_refuse_several_checkpoints(
    two: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    out = tmp_path / "out.safetensors"
    argv = [str(out) if a == "OUT" else a for a in argv]
    rc, stdout, err = run(capsys, *argv, *two)
    assert rc == 2 and stdout == ""
    assert err.startswith("quantcheck: error: ") and err.count("\n") == 1, err
    assert f"{argv[0]} writes one checkpoint" in err and "2 checkpoints" in err
    assert "--as-one" in err and A in err and B in err
    assert not out.exists() and list(tmp_path.glob("*.tmp*")) == []


def test_fix_as_one_reads_the_files_as_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, t in (("p1.safetensors", "x.weight"), ("p2.safetensors", "y.weight")):
        write_safetensors(tmp_path / name, [RawTensor(t, "F32", (1,), b"\0\0\x80?")])
    paths = [str(tmp_path / "p1.safetensors"), str(tmp_path / "p2.safetensors")]
    rc, _, err = run(capsys, "fix", "--dry-run", *paths)
    assert rc == 2 and "--as-one" in err
    rc, _, err = run(capsys, "fix", "--dry-run", "--as-one", *paths)
    assert rc == 0, err


def test_fix_of_a_sharded_folder_is_one_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards named `-of-` in a folder are one checkpoint, as `check` reads them."""
    folder = tmp_path / "m"
    folder.mkdir()
    for i, t in ((1, "x.weight"), (2, "y.weight")):
        write_safetensors(
            folder / f"model-0000{i}-of-00002.safetensors",
            [RawTensor(t, "F32", (1,), b"\0\0\x80?")],
        )
    rc, _, err = run(capsys, "fix", "--dry-run", str(folder))
    assert rc == 0, err
