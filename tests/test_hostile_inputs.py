"""Hostile inputs (files, paths, strings): every command exits 0/1/2 with findings or one clear
line, never a traceback or a hang. Each test reproduces one defect of a class from issue 12."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hostile import marker_bytes, tensors, write
from quantcheck.cli import main

L = "blocks.0.attn.to_q"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def codes(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, list[dict[str, Any]]]:
    rc, out, _ = run(capsys, "check", "--format", "json", *paths)
    return rc, json.loads(out)["diagnostics"]


def fp8_file(path: Path, marker: Any = None, metadata: dict[str, str] | None = None) -> Path:
    m = marker_bytes(marker if marker is not None else {"format": "float8_e4m3fn"})
    return write(path, tensors([(f"{L}.weight", "F8_E4M3", [4, 4]),
                                (f"{L}.weight_scale", "F32", [], b"\x00\x00\x80\x3f"),
                                (f"{L}.comfy_quant", "U8", [len(m)], m)], metadata))


# -- 5: deeply nested JSON values -------------------------------------------------------------

def _nested(depth: int) -> Any:
    v: Any = []
    for _ in range(depth - 1):
        v = [v]
    return v


@pytest.mark.parametrize("depth", [65, 450, 900])
@pytest.mark.parametrize("command", ["check", "inspect"])
def test_deep_value_in_header_and_tensor_marker(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                depth: int, command: str) -> None:
    """The same deep value in `_quantization_metadata` and the tensor marker: compared, printed
    and hashed without RecursionError; refused with a finding (markers are flat)."""
    marker = {"format": "float8_e4m3fn", "x": _nested(depth)}
    meta = {"_quantization_metadata": json.dumps({"layers": {L: marker}})}
    f = fp8_file(tmp_path / "deep.safetensors", marker, meta)
    rc, out, err = run(capsys, command, str(f))
    assert "Traceback" not in err and "RecursionError" not in out + err
    assert rc in (0, 1)
    if command == "check":
        rc, diags = codes(capsys, str(f))
        msgs = [d["message"] for d in diags if d["code"] in ("QC201", "QC208")]
        assert any("nested more than 64 levels" in m for m in msgs), msgs


def test_shallow_nested_marker_value_is_read(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Below the bound nothing changes: equal header and tensor markers agree silently."""
    marker = {"format": "float8_e4m3fn", "x": _nested(60)}
    meta = {"_quantization_metadata": json.dumps({"layers": {L: marker}})}
    f = fp8_file(tmp_path / "ok.safetensors", marker, meta)
    _rc, diags = codes(capsys, str(f))
    assert not [d for d in diags if d["code"] in ("QC201", "QC208", "QC210", "QC211")]


def test_strict_equal_is_iterative() -> None:
    from quantcheck.markers import _strict_equal

    assert _strict_equal(_nested(5000), _nested(5000))
    assert not _strict_equal(_nested(5000), _nested(4999))
    assert not _strict_equal({"a": [1, True]}, {"a": [1, 1]})
    assert not _strict_equal(16, 16.0)


def test_deep_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fp8_file(tmp_path / "a.safetensors")
    doc = {"metadata": {"x": _nested(500)}, "weight_map": {f"{L}.weight": "a.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    _rc, out, err = run(capsys, "check", "--format", "json", str(tmp_path))
    assert "Traceback" not in err
    assert any(d["code"] == "QC503" for d in json.loads(out)["diagnostics"])


# -- 7: index names that are not file names ---------------------------------------------------

@pytest.mark.parametrize("name", ["a\u0000.safetensors", "\ud800.safetensors", "",
                                  "x" * 5000 + ".safetensors"])
def test_index_names_impossible_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     name: str) -> None:
    fp8_file(tmp_path / "a.safetensors")
    doc = {"weight_map": {f"{L}.weight": "a.safetensors", "other.weight": name}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    rc, out, err = run(capsys, "check", "--format", "json", str(tmp_path))
    assert rc == 1, err
    assert any(d["code"] == "QC504" for d in json.loads(out)["diagnostics"])


# -- 9: FIFOs, sockets and other non-regular files --------------------------------------------

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@needs_fifo
@pytest.mark.parametrize("command", ["check", "inspect"])
@pytest.mark.parametrize("how", ["direct", "folder"])
def test_fifo_input_is_refused_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        command: str, how: str) -> None:
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    rc, _out, err = run(capsys, command, str(fifo if how == "direct" else tmp_path))
    assert rc == 2
    assert "FIFO" in err and "not a regular file" in err and "Traceback" not in err


@needs_fifo
def test_fifo_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "model.safetensors.index.json")
    rc, _out, err = run(capsys, "check", str(tmp_path / "model.safetensors.index.json"))
    assert rc == 2 and "FIFO" in err


@needs_fifo
def test_index_naming_a_fifo_says_what_it_is(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    fp8_file(tmp_path / "a.safetensors")
    os.mkfifo(tmp_path / "b.safetensors")
    doc = {"weight_map": {f"{L}.weight": "a.safetensors", "other.weight": "b.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(doc))
    _rc, out, _err = run(capsys, "check", "--format", "json", str(tmp_path))
    msgs = [d["message"] for d in json.loads(out)["diagnostics"] if d["code"] == "QC504"]
    assert msgs and "FIFO" in msgs[0] and "does not exist" not in msgs[0]


def test_character_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    rc, _out, err = run(capsys, "check", "/dev/zero")
    assert rc == 2 and "character device" in err


# -- 15: one file under two spellings ---------------------------------------------------------

def test_same_file_two_spellings_is_read_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    f = fp8_file(tmp_path / "a.safetensors")
    (tmp_path / "link.safetensors").symlink_to(f)
    monkeypatch.chdir(tmp_path)
    for paths in (["a.safetensors", "./a.safetensors"], ["a.safetensors", "link.safetensors"],
                  ["a.safetensors", str(f)]):
        _rc, diags = codes(capsys, *paths)
        assert not [d for d in diags if d["code"] == "QC501"], paths
        _rc, out, _ = run(capsys, "check", "--format", "json", *paths)
        assert len(json.loads(out)["inputs"]) == 1


# -- 8: quantize options out of range ---------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-16", "3", "12", "24", "x", "99999999999"])
def test_quantize_group_size_out_of_range_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    src = write(tmp_path / "in.safetensors", tensors([("l.weight", "F32", [16, 64])]))
    with pytest.raises(SystemExit) as exc:
        main(["quantize", str(src), "-o", str(tmp_path / "out.safetensors"),
              "--format", "asym_w4a8_int8", f"--group-size={value}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--group-size" in err and "Traceback" not in err
    assert not (tmp_path / "out.safetensors").exists()


@pytest.mark.parametrize("value", ["4", "8", "16", "32"])
def test_quantize_group_size_in_range_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           value: str) -> None:
    src = write(tmp_path / "in.safetensors", tensors([("l.weight", "F32", [16, 256])]))
    rc, _, err = run(capsys, "quantize", str(src), "-o", str(tmp_path / "out.safetensors"),
                     "--format", "asym_w4a8_int8", "--group-size", value)
    assert rc == 0, err
