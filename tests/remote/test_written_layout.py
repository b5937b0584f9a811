"""A file quantcheck wrote is cheap to check remotely (issue 22, item 8): `quantize` and `fix`
put every marker tensor right after the header, so `check URL` of their output costs one
HTTP request, on a multi-range server and on one that answers only the first range. Tensors
keep their bytes (only offsets move) and safetensors still loads the output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fix._real import plain, quantized, raw, weight, write
from fix._util import tensor_bytes
from quantcheck.cli.main import main
from quantcheck.io.header import read_header
from quantcheck.io.source import LocalFile
from rules.sglang.loader_helpers import without_loaders

from ._hostile import HostileServer
from ._run import run_cli

LAYERS = 8
#: the first read, made smaller than the data section so that markers spread over the file
#: need requests of their own
FIRST = 64 * 1024


def _layers(n: int = LAYERS) -> list[list]:
    return [
        [
            raw(f"blocks.{i}.attn.qkv.weight", weight(128, 256, seed=i), "BF16"),
            raw(f"blocks.{i}.attn.qkv.bias", np.ones(128, np.float32), "F32"),
        ]
        for i in range(n)
    ]


def _quantized_interleaved(path: Path) -> Path:
    """FP8 layers with their markers among the data, and one BF16 weight with a stale FP8
    marker (QC304, which `fix` repairs safely)."""
    layers = [
        quantized(f"blocks.{i}.attn.qkv", weight(128, 256, seed=i), "float8_e4m3fn")
        for i in range(LAYERS)
    ]
    stale = plain("blocks.99.mlp.fc1", weight(128, 256, seed=99))
    stale += quantized("blocks.99.mlp.fc1", weight(8, 16), "float8_e4m3fn")[-1:]
    return write(path, *layers, stale)


def _write(command: str, tmp_path: Path) -> Path:
    out = tmp_path / "out.safetensors"
    if command == "quantize":
        src = write(tmp_path / "plain.safetensors", *_layers())
        args = ["quantize", str(src), "-o", str(out), "--to", "float8_e4m3fn"]
    else:
        src = _quantized_interleaved(tmp_path / "in.safetensors")
        args = ["fix", str(src), "-o", str(out)]
    assert main(args) in (0, 1)
    return out


def _markers_end(path: Path) -> int:
    """Where the last marker's bytes end."""
    with LocalFile(path) as src:
        h = read_header(src)
        return max(t.end for t in h.tensors.values() if t.name.endswith(".comfy_quant"))


@pytest.mark.parametrize("command", ["quantize", "fix"])
def test_markers_lie_right_after_the_header(command: str, tmp_path: Path) -> None:
    out = _write(command, tmp_path)
    with LocalFile(out) as src:
        h = read_header(src)
        names = list(h.tensors)
        marks = [n for n in names if n.endswith(".comfy_quant")]
        assert marks and names[: len(marks)] == marks  # header order is data order
        starts = sorted((t.begin, t.name) for t in h.tensors.values())
        assert [n for _, n in starts[: len(marks)]] == marks


def test_fix_keeps_every_tensors_bytes(tmp_path: Path) -> None:
    """Only offsets move: each tensor the fix leaves alone has its input bytes."""
    out = _write("fix", tmp_path)
    before = tensor_bytes([str(tmp_path / "in.safetensors")])
    after = tensor_bytes([str(out)])
    assert (
        "blocks.99.mlp.fc1.comfy_quant" in before and "blocks.99.mlp.fc1.comfy_quant" not in after
    )
    assert after == {k: v for k, v in before.items() if k != "blocks.99.mlp.fc1.comfy_quant"}


@pytest.mark.parametrize("command", ["quantize", "fix"])
def test_safetensors_loads_the_output(command: str, tmp_path: Path) -> None:
    """safetensors (with torch, which knows FP8) loads every tensor with the bytes we wrote."""
    torch = pytest.importorskip("torch", reason="needs torch, which knows FP8 (make test has it)")
    from safetensors.torch import load_file

    out = _write(command, tmp_path)
    loaded = load_file(str(out))
    ours = tensor_bytes([str(out)])
    assert sorted(loaded) == sorted(ours)
    for name, t in loaded.items():
        raw_bytes = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        assert raw_bytes == ours[name][2], name


@pytest.mark.parametrize("mode", ["ok", "first"], ids=["multi-range", "single-range"])
@pytest.mark.parametrize("command", ["quantize", "fix"])
def test_check_of_a_written_file_costs_one_request(
    command: str,
    mode: str,
    tmp_path: Path,
    hostile: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import quantcheck.io.httpsource as hs

    out = _write(command, tmp_path)
    assert _markers_end(out) <= FIRST < out.stat().st_size  # the first read is not the file
    monkeypatch.setattr(hs, "FIRST_READ", FIRST)
    hostile.set_data(out.read_bytes())
    before = len(hostile.served.requests)
    _code, doc, err = run_cli(
        capsys, "check", hostile.url(mode, "out.safetensors"), "--output-format", "json"
    )
    assert isinstance(doc, dict), err
    assert len(hostile.served.requests) - before == 1, hostile.served.requests
    assert doc["inputs"][0]["requests"] == 1
    local = json.loads(_local(capsys, out))
    assert [d["code"] for d in doc["diagnostics"]] == [d["code"] for d in local["diagnostics"]]


def _local(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    capsys.readouterr()
    main(without_loaders(["check", str(path), "--output-format", "json"]))
    return capsys.readouterr().out
