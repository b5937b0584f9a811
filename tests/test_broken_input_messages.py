"""Broken inputs get messages a person understands (issue 22 item 6): a file that is not a
safetensors file says so, a truncated file is one finding, an unreadable file says what and
why without the raw errno form, and `inspect` of a file the safetensors library refuses
exits non-zero."""

from __future__ import annotations

import builtins
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from quantcheck.cli.main import main
from quantcheck.errors import describe_os_error


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def diagnostics(capsys: pytest.CaptureFixture[str], path: Path) -> list[dict[str, Any]]:
    rc, out, _ = run(capsys, "check", "--output-format", "json", str(path))
    assert rc == 1
    return list(json.loads(out)["diagnostics"])


@pytest.mark.parametrize(
    ("start", "what"),
    [
        (b"# quantcheck\n\nValidate", "the file is text, starting '# quantc'"),
        (b"PK\x03\x04" + bytes(60), "the file is a zip archive (a PyTorch .pt/.ckpt/.bin"),
        (b"GGUF\x03\x00\x00\x00" + bytes(60), "the file is a GGUF file"),
        (b"<!DOCTYPE html><html>", "an HTML or XML page"),
    ],
)
def test_not_a_safetensors_file(
    start: bytes, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(start + b" " * 200)
    [d] = diagnostics(capsys, path)
    assert d["code"] in ("QC102", "QC103")
    assert d["message"].startswith(
        "not a safetensors file (the first 8 bytes are not a header length: "
    )
    assert what in d["message"]
    assert "bytes; the safetensors limit" not in d["message"]


def test_a_binary_length_too_large_keeps_its_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 200_000_000) + bytes(64))
    [d] = diagnostics(capsys, path)
    assert d["code"] == "QC102"
    assert (
        d["message"] == "header length is 200,000,000 bytes; the safetensors limit is 100,000,000"
    )


def test_truncated_file_is_one_finding(
    examples_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cut falls inside the data: 7 layers' marker tensors lie past the end. Before, each
    drew a QC314 "see the marker finding" with no marker finding anywhere."""
    data = (examples_dir / "nvfp4.safetensors").read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:60000])
    found = diagnostics(capsys, cut)
    assert [d["code"] for d in found] == ["QC117"]
    assert found[0]["message"].startswith(
        f"truncated: expected {len(data):,} bytes, found 60,000 — re-download"
    )
    _, out, _ = run(capsys, "check", "--no-color", "--show-all", str(cut))
    assert "see the marker finding" not in out


def test_unmarked_layers_of_a_truncated_file_are_still_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only layers whose marker is past the end lose their QC314: a quantized weight with no
    marker tensor at all is still unmarked."""
    from quantcheck.io.build import RawTensor, write_safetensors

    path = tmp_path / "model.safetensors"
    write_safetensors(
        path,
        [
            RawTensor("a.weight", "I8", (4, 4), bytes(16)),
            RawTensor("b.weight", "BF16", (64, 64), bytes(64 * 64 * 2)),
        ],
    )
    path.write_bytes(path.read_bytes()[:-100])
    codes = [d["code"] for d in diagnostics(capsys, path)]
    assert codes.count("QC117") == 1 and "QC314" in codes


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A file every open of which is refused with EACCES (tests run as root, where chmod does
    not refuse anything)."""
    path = tmp_path / "locked.safetensors"
    path.write_bytes(b"x" * 64)
    real_open, real_os_open = builtins.open, os.open

    def refuse(file: Any, *a: Any, **k: Any) -> Any:
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return None

    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: refuse(f) or real_open(f, *a, **k))
    monkeypatch.setattr(os, "open", lambda f, *a, **k: refuse(f) or real_os_open(f, *a, **k))
    return path


@pytest.mark.parametrize("command", ["check", "inspect"])
def test_permission_denied_says_what_and_why(
    command: str, unreadable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(capsys, command, str(unreadable))
    assert rc == 2
    assert f"cannot read {unreadable}: permission denied: this user may not use it" in err
    assert "Errno" not in err


def test_os_errors_without_a_known_errno_are_still_sentences() -> None:
    assert describe_os_error(OSError(5, "Input/output error", "/m/x"), "read") == (
        "cannot read /m/x: the disk (or network mount) returned an input/output error while "
        "reading it"
    )
    # a write that fails (the generic handler of every command) does not say "read"
    assert describe_os_error(OSError(16, "Device or resource busy", "/m/out")) == (
        "/m/out: Device or resource busy"
    )
    assert describe_os_error(OSError("short read of the header")) == "short read of the header"


def test_inspect_of_a_refused_file_reports_it_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], examples_dir: Path
) -> None:
    text = tmp_path / "notes.safetensors"
    text.write_text("# my notes\n" * 20)
    rc, _, err = run(capsys, "inspect", str(text))
    assert rc == 1
    assert "error   QC102 header-too-large:" in err and "not a safetensors file" in err
    rc, out, _ = run(capsys, "inspect", "--output-format", "json", str(text))
    assert rc == 1
    assert [p["code"] for p in json.loads(out)["problems"]] == ["QC102"]
    rc, out, err = run(capsys, "inspect", str(examples_dir / "nvfp4.safetensors"))
    assert rc == 0 and err == ""
    rc, _, _ = run(capsys, "inspect", str(examples_dir / "nvfp4.safetensors"), str(text))
    assert rc == 1
