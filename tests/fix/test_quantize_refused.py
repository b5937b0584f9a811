"""`quantize` leaves a layer the quantizer refuses (NaN weights) as it is and writes the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
ml_dtypes = pytest.importorskip("ml_dtypes")

from quantcheck import load  # noqa: E402
from quantcheck.cli.main import main  # noqa: E402
from quantcheck.io.build import RawTensor, write_safetensors  # noqa: E402
from quantcheck.numeric.arrays import to_bytes  # noqa: E402


def _model(tmp: Path) -> Path:
    rng = np.random.default_rng(1)
    tensors = []
    for i in range(3):
        w = (rng.standard_normal((64, 128)) * 0.05).astype(ml_dtypes.bfloat16)
        if i == 1:
            w[3, 7] = np.nan
        tensors.append(RawTensor(f"blocks.{i}.attn.to_q.weight", "BF16", w.shape, to_bytes(w)))
    path = tmp / "bf16.safetensors"
    write_safetensors(path, tensors)
    return path


def test_nan_layer_is_kept_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = _model(tmp_path)
    out = tmp_path / "fp8.safetensors"
    rc = main(
        ["quantize", str(src), "-o", str(out), "--to", "float8_e4m3fn", "--target", "comfyui"]
    )
    text = capsys.readouterr()
    assert rc == 1, text
    assert "blocks.1.attn.to_q" in text.out and "NaN" in text.out
    with load(out) as ck:
        fmts = {p: la.format for p, la in ck.layers.items()}
        assert fmts == {
            "blocks.0.attn.to_q": "float8_e4m3fn",
            "blocks.1.attn.to_q": None,
            "blocks.2.attn.to_q": "float8_e4m3fn",
        }
        assert ck.layers["blocks.1.attn.to_q"].weight.dtype == "BF16"
    leftovers = [p.name for p in tmp_path.iterdir() if "quantcheck-tmp" in p.name]
    assert leftovers == []
