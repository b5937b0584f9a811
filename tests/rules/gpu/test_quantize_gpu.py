"""`quantize --gpu`: it says how the written file runs on the GPU, warns where layers would be
emulated, and `--to auto` picks a format that runs natively there."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.formats.table import FORMATS

from .._build import bf16, file


def _bf16(tmp: Path) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    return str(file(lambda: bf16("blocks.0.attn.qkv", 256, 256))(tmp)[0])


def test_warns_where_the_format_is_emulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _bf16(tmp_path)
    out = str(tmp_path / "o.safetensors")
    assert (
        main(
            ["quantize", src, "-o", out, "--to", "nvfp4", "--gpu", "rtx4090", "--target", "comfyui"]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "  comfyui on rtx4090 (sm_89): 1 nvfp4 layer emulated — dequantized every step" in text
    assert (
        "  warning: on rtx4090 (sm_89) the nvfp4 layers are not all native; a float8_e4m3fn" in text
    )


def test_no_warning_where_native(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _bf16(tmp_path)
    out = str(tmp_path / "o.safetensors")
    assert (
        main(["quantize", src, "-o", out, "--to", "nvfp4", "--gpu", "b200", "--target", "comfyui"])
        == 0
    )
    text = capsys.readouterr().out
    assert "comfyui on b200 (sm_100): all 1 quantized layer native" in text
    assert "warning:" not in text


@pytest.mark.parametrize(
    ("gpu", "fmt", "target"),
    [
        ("rtx4090", "float8_e4m3fn", "default"),
        ("rtx3090", "int8_tensorwise", "comfyui"),
        ("t4", "int8_tensorwise", "comfyui"),
    ],
)
def test_auto_picks_a_native_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu: str, fmt: str, target: str
) -> None:
    src = _bf16(tmp_path)
    out = tmp_path / "o.safetensors"
    argv = ["quantize", src, "-o", str(out), "--to", "auto", "--gpu", gpu, "--target", target]
    assert main(argv) == 0
    assert f"--to auto: {fmt} runs natively on" in capsys.readouterr().out
    assert FORMATS[fmt].name.encode() in out.read_bytes()[:4096]


def test_auto_picks_only_what_the_targets_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INT8 runs natively on an RTX 3090, but sglang reads a DiT of no detected family with
    --transformer-weights-path, which reads no INT8 markers (QC631): nothing native loads."""
    src = _bf16(tmp_path)
    out = tmp_path / "o.safetensors"
    assert main(["quantize", src, "-o", str(out), "--to", "auto", "--gpu", "rtx3090"]) == 2
    assert "runs natively on rtx3090 (sm_86) and loads on sglang, comfyui" in (
        capsys.readouterr().err
    )
    assert not out.exists()


def test_auto_needs_a_gpu_and_a_native_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _bf16(tmp_path)
    out = str(tmp_path / "o.safetensors")
    assert main(["quantize", src, "-o", out, "--to", "auto"]) == 2
    assert "--to auto needs --gpu" in capsys.readouterr().err
    assert main(["quantize", src, "-o", out, "--to", "auto", "--gpu", "directml"]) == 2
    assert "no format quantize writes runs natively on directml" in capsys.readouterr().err
    assert not Path(out).exists()
