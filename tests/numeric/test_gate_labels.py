"""The numeric gate refuses only what the codecs cannot decode (issue 20, item 10).

comfy-kitchen's `quantize_mxfp8` returns its block scales as float8_e8m0fnu, so a file saved
straight from it stores them as F8_E8M0: a dtype label ComfyUI's default loader and sglang
refuse (QC305, QC605), but the bytes are E8M0 exponents either way. `dequantize` and `compare`
read such a layer, and the numbers are comfy-kitchen's own dequantization of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from quantcheck import load
from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.rules.numeric.gate import numeric_refusal

P = "blocks.0.attn.qkv"


def _kitchen_mxfp8(ck, tmp: Path, n: int = 64, k: int = 128) -> tuple[Path, Path, np.ndarray]:
    """(quantized file as comfy-kitchen returns it, BF16 original, ck's dequantize in F32)."""
    import comfy_kitchen
    import torch
    from safetensors.torch import save_file

    w = torch.randn(n, k, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16) * 0.05
    q, scales = comfy_kitchen.quantize_mxfp8(w, pad_32x=False)
    assert scales.dtype == torch.float8_e8m0fnu
    want = comfy_kitchen.dequantize_mxfp8(q, scales, torch.float32)
    conf = torch.tensor(list(json.dumps({"format": "mxfp8"}).encode()), dtype=torch.uint8)
    quant, orig = tmp / "q.safetensors", tmp / "o.safetensors"
    save_file({f"{P}.weight": q, f"{P}.weight_scale": scales, f"{P}.comfy_quant": conf}, quant)
    save_file({f"{P}.weight": w}, orig)
    return quant, orig, ck.t2n(want)[:n, :k]


def test_e8m0_block_scales_are_not_a_reason_to_refuse_numbers(ck, tmp_path: Path) -> None:
    quant, _, want = _kitchen_mxfp8(ck, tmp_path)
    codes = {d.code for d in check_paths([str(quant)], target="all").diagnostics}
    assert "QC305" in codes  # still reported: sglang and ComfyUI's default loader refuse it
    layer = load(str(quant)).layer(P)
    assert numeric_refusal(layer.layer) is None
    got = layer.dequantize(shape=want.shape)
    np.testing.assert_array_equal(got, want)


def test_dequantize_and_compare_read_e8m0_scales(ck, tmp_path: Path, capsys) -> None:
    from safetensors.numpy import load_file

    quant, orig, want = _kitchen_mxfp8(ck, tmp_path)
    out = tmp_path / "dq.safetensors"
    assert main(["dequantize", str(quant), "-o", str(out), "--dtype", "f32"]) == 0
    got = load_file(str(out))[f"{P}.weight"]
    np.testing.assert_array_equal(got[: want.shape[0], : want.shape[1]], want)
    capsys.readouterr()
    assert main(["compare", str(quant), str(orig), "--output-format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert P in text and "skipped" not in text and "QC305" not in text


@pytest.mark.parametrize("label", ["F32", "I8"])
def test_a_label_the_codec_cannot_read_still_blocks(tmp_path: Path, label: str) -> None:
    """Not every dtype mismatch is a label: F32 or I8 block scales are other numbers."""
    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    path = tmp_path / "m.safetensors"
    n, k = 128, 128
    write_safetensors(
        path,
        [
            RawTensor(f"{P}.weight", "F8_E4M3", (n, k), bytes(n * k)),
            RawTensor(
                f"{P}.weight_scale",
                label,
                (n, k // 32),
                bytes(n * k // 32 * (4 if label == "F32" else 1)),
            ),
            marker_tensor(P, {"format": "mxfp8"}),
        ],
    )
    why = numeric_refusal(load(str(path)).layer(P).layer)
    assert why is not None and "QC305" in why
