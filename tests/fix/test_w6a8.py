"""w6a8_int8 end to end: `quantize --format w6a8_int8`, its verdicts, and `fix --target
comfyui@0271a469` relabelling it to asym_w4a8_int8 (the same tensors that release loads) without
changing a value; the newest ComfyUI step (2026-09-29) loads it as it is; for sglang the layer is
only repairable with --unsafe-fixes (dequantized)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import safetensors.numpy

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.model.checkpoint import load_checkpoint

LAYER = "blocks.0.fc"


def _w6a8_file(tmp_path: Path) -> Path:
    w = (np.arange(64 * 256, dtype=np.float32).reshape(64, 256) % 97 - 48) / 480
    src = tmp_path / "plain.safetensors"
    safetensors.numpy.save_file({f"{LAYER}.weight": w}, str(src))
    out = tmp_path / "w6a8.safetensors"
    assert main(
        ["quantize", str(src), "-o", str(out), "--to", "w6a8_int8", "--target", "comfyui"]
    ) in (0, 1)
    return out


def _codes(path: Path, target: str) -> set[str]:
    return {d.code for d in check_paths([str(path)], target=target).diagnostics}


def test_quantize_writes_w6a8_and_runtimes_judge_it(tmp_path: Path) -> None:
    out = _w6a8_file(tmp_path)
    with load_checkpoint(str(out)) as ck:
        layer = ck.layers[LAYER]
        assert layer.marker is not None and layer.marker.format == "w6a8_int8"
        assert layer.weight is not None and layer.weight.shape == (64, 192)
        assert set(layer.tensors) == {"weight", "weight_s_rel", "weight_s_channel", "comfy_quant"}
    assert _codes(out, "comfyui@0271a469") >= {"QC610"}
    assert _codes(out, "comfyui") == set()  # the newest step loads w6a8_int8
    # QC601: no loader of sglang 0.5.23 has w6a8; its other loaders say why they cannot load it
    # (--transformer-weights-path QC631, --comfyui-mode QC636 / QC637)
    assert _codes(out, "sglang") == {"QC601", "QC631", "QC636", "QC637"}


def test_fix_for_comfyui_relabels_without_changing_values(tmp_path: Path) -> None:
    out = _w6a8_file(tmp_path)
    fixed = tmp_path / "fixed.safetensors"
    assert main(["fix", str(out), "-o", str(fixed), "--target", "comfyui@0271a469"]) == 0
    assert _codes(fixed, "comfyui@0271a469") == set()
    with load_checkpoint(str(out)) as a, load_checkpoint(str(fixed)) as b:
        la, lb = a.layers[LAYER], b.layers[LAYER]
        assert la.marker is not None and lb.marker is not None
        assert lb.marker.format == "asym_w4a8_int8"
        assert {k: v for k, v in lb.marker.fields.items() if k != "format"} == {
            k: v for k, v in la.marker.fields.items() if k != "format"
        }
        assert np.array_equal(a.layer(LAYER).dequantize(), b.layer(LAYER).dequantize())
    # sglang still reads W4A8 as 4-bit only: the relabelled file is a 6-bit W4A8 file there.
    assert "QC312" in _codes(fixed, "sglang")
