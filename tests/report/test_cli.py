"""`quantcheck report` end to end: local files, a URL, --compare, and what exit code 2 means."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from example_files import BROKEN_EXAMPLE
from quantcheck.cli.main import main
from remote._hostile import HostileServer
from report._html import parse


def test_writes_the_report(
    examples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(examples_dir / BROKEN_EXAMPLE), "-o", str(out), "--deep"]) == 0
    assert "wrote" in capsys.readouterr().err
    doc = parse(out.read_text(encoding="utf-8"))
    assert not doc.errors and "QC305" in doc.text
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_missing_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "nope.safetensors"), "-o", str(out)]) == 2
    assert "error" in capsys.readouterr().err and not out.exists()


def test_remote_input(examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTCHECK_HTTP_TIMEOUT", "5")
    server = HostileServer()
    server.set_data((examples_dir / BROKEN_EXAMPLE).read_bytes())
    server.start()
    try:
        out = tmp_path / "r.html"
        assert main(["report", server.url("ok", BROKEN_EXAMPLE), "-o", str(out)]) == 0
    finally:
        server.stop()
    html = out.read_text(encoding="utf-8")
    assert not parse(html).errors
    assert "QC304" in html and "model.diffusion_model.transformer_blocks.1.attn.to_k" in html


def test_compare_against_an_original(examples_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    from report._original import make_original

    quantized = examples_dir / "nvfp4.safetensors"
    original = make_original(quantized, tmp_path / "original.safetensors")
    out = tmp_path / "r.html"
    assert main(["report", str(quantized), "--compare", str(original), "-o", str(out)]) == 0
    doc = parse(out.read_text(encoding="utf-8"))
    assert not doc.errors
    assert "The 20 worst layers" in doc.text
    assert sum(1 for h in doc.hrefs if h.startswith("#H")) == 14


def test_compare_unavailable_is_a_clear_exit_2(
    examples_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "quantcheck.numeric.compare", None)
    out = tmp_path / "r.html"
    path = str(examples_dir / "nvfp4.safetensors")
    assert main(["report", path, "--compare", path, "-o", str(out)]) == 2
    assert "--compare is not available" in capsys.readouterr().err
    assert not out.exists()
