"""`quantcheck report` on many checkpoints: a folder with index.html linking one page each."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from example_files import BROKEN_EXAMPLE
from quantcheck.cli.main import main
from quantcheck.io.build import RawTensor, write_safetensors
from report._html import parse


def test_folder_gives_an_index_and_a_page_per_checkpoint(
    examples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(examples_dir / BROKEN_EXAMPLE, models / BROKEN_EXAMPLE)
    shutil.copy(examples_dir / "nvfp4.safetensors", models / "nvfp4.safetensors")
    write_safetensors(
        models / "lora.safetensors", [RawTensor("lora.down.weight", "BF16", (4, 4), bytes(32))]
    )
    out = tmp_path / "report.html"
    assert main(["report", str(models), "-o", str(out)]) == 0
    folder = tmp_path / "report"  # a folder: the .html suffix is dropped
    assert "wrote" in capsys.readouterr().err and not out.exists()
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "0001-broken_seeds.safetensors.html",
        "0003-nvfp4.safetensors.html",
        "index.html",
    ]  # the LoRA is listed, without a page
    index = (folder / "index.html").read_text(encoding="utf-8")
    doc = parse(index)
    assert not doc.errors
    assert 'href="0001-broken_seeds.safetensors.html"' in index
    assert "not a quantized checkpoint" in doc.text and "fails" in doc.text
    page = (folder / "0001-broken_seeds.safetensors.html").read_text(encoding="utf-8")
    assert not parse(page).errors and "QC305" in page and 'href="index.html"' in page


def test_one_checkpoint_keeps_one_file(examples_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(examples_dir / BROKEN_EXAMPLE), "-o", str(out)]) == 0
    assert out.is_file() and "All checkpoints" not in out.read_text(encoding="utf-8")


def test_pages_are_written_as_they_are_made(
    examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 P: each page reaches the disk before the next one is rendered, so a report of
    many checkpoints holds one page in memory, not all of them."""
    import quantcheck.cli.report as report_cli
    import quantcheck.render.html as html

    models = tmp_path / "models"
    models.mkdir()
    for i in range(4):
        shutil.copy(examples_dir / "nvfp4.safetensors", models / f"m{i}.safetensors")
    rendered: list[int] = []
    written: list[tuple[str, int]] = []
    real_render, real_write = html.render_html, report_cli.write_atomic

    def render(*args: object, **kwargs: object) -> str:
        rendered.append(len(rendered))
        return real_render(*args, **kwargs)  # type: ignore[arg-type]

    def write(path: Path, text: str) -> None:
        written.append((path.name, len(rendered)))
        real_write(path, text)

    monkeypatch.setattr(html, "render_html", render)
    monkeypatch.setattr(report_cli, "write_atomic", write)
    assert main(["report", str(models), "-o", str(tmp_path / "out")]) == 0
    pages = [w for w in written if w[0] != "index.html"]
    assert [n for _, n in pages] == [1, 2, 3, 4]  # page k written right after render k
    assert written[-1][0] == "index.html"


def test_index_marks_an_unverified_verdict(examples_dir: Path, tmp_path: Path) -> None:
    """Issue 20 item 11: the index's verdict cell says when it rests on an unverified reading."""
    models = tmp_path / "models"
    models.mkdir()
    for name in ("w6a8_int8.safetensors", "nvfp4.safetensors"):
        shutil.copy(examples_dir / name, models / name)
    out = tmp_path / "out"
    assert main(["report", str(models), "--target", "comfyui", "-o", str(out)]) == 0
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.count("(unverified)") == 1
    assert 'title="unverified: w6a8_int8 support read from a port, not from ComfyUI"' in index
    assert not parse(index).errors
