"""`quantize --family auto|none|NAME` with `--keep` / `--quantize`: the family's high-precision
layers stay in their dtype, the output names them and why, and the file written draws no
contract error for its targets (issue 26 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.model.checkpoint import load_checkpoint

from . import standin as S


@pytest.fixture()
def klein(tmp_path: Path) -> Path:
    """A FLUX.2 klein-4b layout cut to 128 x 128 (real BF16 values)."""
    return S.write(tmp_path / "klein.safetensors", S.miniature("flux2-klein-4b"))


def _formats(path: Path) -> dict[str, object]:
    with load_checkpoint([str(path)]) as ck:
        return {p: (la.marker.format if la.marker else None) for p, la in ck.layers.items()}


def _quantize(src: Path, out: Path, *extra: str) -> int:
    return main(["quantize", str(src), "-o", str(out), *extra])


def test_auto_keeps_the_family_layers_and_says_why(
    klein: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(klein, out, "--to", "nvfp4") == 0
    text = capsys.readouterr().out
    assert "kept 9 layers in their dtype (Flux.2):" in text
    assert "img_in: ComfyUI's Flux.2 detection reads its stored shape, which nvfp4 packs" in text
    assert "final_layer.linear: Flux.2's producers keep it (convert_to_quant --flux2" in text
    fmts = _formats(out)
    assert fmts["img_in"] is None and fmts["final_layer.linear"] is None
    assert fmts["double_stream_modulation_img.lin"] is None
    assert fmts["double_blocks.0.img_attn.qkv"] == "nvfp4"
    codes = {d.code for d in check_paths([str(out)]).diagnostics}
    assert "QC860" not in codes and "QC861" not in codes and "QC864" in codes


def test_none_still_writes_no_contract_error_for_the_targets(
    klein: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(klein, out, "--to", "nvfp4", "--family", "none") == 0
    text = capsys.readouterr().out
    assert "skipped img_in: left as it is: comfyui@" in text and "QC860" in text
    fmts = _formats(out)
    assert fmts["img_in"] is None and fmts["txt_in"] is None  # ComfyUI would misdetect them
    assert fmts["final_layer.linear"] == "nvfp4"  # no family list: quantized
    report = check_paths([str(out)])
    codes = {d.code for d in report.diagnostics}
    assert "QC860" not in codes and "QC861" in codes  # a warning of taste, not a contract


def test_quantize_and_keep_patterns_override_the_family(klein: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.safetensors"
    extra = ("--quantize", "final_layer", "--keep", "double_blocks.0.*")
    assert _quantize(klein, out, "--to", "float8_e4m3fn", *extra) == 0
    fmts = _formats(out)
    assert fmts["final_layer.linear"] == "float8_e4m3fn"
    assert fmts["double_blocks.0.img_attn.qkv"] is None
    assert fmts["double_blocks.1.img_attn.qkv"] == "float8_e4m3fn"
    assert fmts["time_in.in_layer"] is None  # still on the family's list


def test_a_named_family_is_used_even_when_another_is_detected(
    klein: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(klein, out, "--to", "float8_e4m3fn", "--family", "wan", "--dry-run") == 0
    assert "family wan (Wan 2.x): no layer of its high-precision list to keep" in (
        capsys.readouterr().out
    )


def test_fp8_keeps_the_producers_list_not_the_packed_reason(
    klein: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.safetensors"
    assert _quantize(klein, out, "--to", "float8_e4m3fn", "--dry-run") == 0
    text = capsys.readouterr().out
    assert (
        "img_in: Flux.2's producers keep it (convert_to_quant --flux2, comfy-quants (flux2 "
        "adapter): quality)" in text
    )
    assert "packs" not in text


#: formats whose stored weight is not [N, K] (QC860's: E2M1 and INT4 packing), and one that is
PACKED = ("nvfp4", "asym_w4a8_int8")


@pytest.mark.parametrize("fmt", [*PACKED, "float8_e4m3fn"])
@pytest.mark.parametrize("name", S.names())
def test_quantize_writes_no_contract_error_for_any_family(
    tmp_path: Path, name: str, fmt: str
) -> None:
    """Every family's stand-in (cut to 64, real values), quantized with `--family auto`: the
    file written draws no QC860/QC862/QC863 error and is still the same family. The text
    encoders whose detection tests a hidden size (qwen3, mistral3, qwen3vl_32b) are unknown
    once cut, as ComfyUI's shape tests would make them."""
    src = S.write(tmp_path / "src.safetensors", S.miniature(name, side=64))
    out = tmp_path / "out.safetensors"
    # the contract codes are ComfyUI's; sglang's --transformer-weights-path refuses W4A8 for
    # a DiT (QC631), so the default targets would refuse the format before writing
    assert _quantize(src, out, "--to", fmt, "--target", "comfyui") == 0
    before = check_paths([str(src)])
    after = check_paths([str(out)])
    assert after.family.get("keys_of") == before.family.get("keys_of")
    errors = {d.code for d in after.diagnostics if d.code in ("QC860", "QC862", "QC863")}
    assert not errors, (name, fmt, errors)
