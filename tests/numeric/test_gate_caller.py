"""The numeric gate is the caller's (issue 23 item 3): `model/` reads numbers, the caller says
which layers it may read. `quantcheck.load` asks the rules' gate; a bare checkpoint asks none."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from quantcheck import load
from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.numeric import NumericError
from quantcheck.rules.numeric.gate import numeric_refusal

P = "blocks.0.fc"
ONES = np.ones((2, 4), dtype=np.float32)


def _fp8(tmp: Path, marker: dict[str, object]) -> Path:
    """An FP8 layer whose weight holds 1.0 (0x38) everywhere and scale 1."""
    path = tmp / "m.safetensors"
    write_safetensors(
        path,
        [
            RawTensor(f"{P}.weight", "F8_E4M3", (2, 4), b"\x38" * 8),
            RawTensor(f"{P}.weight_scale", "F32", (), np.float32(1).tobytes()),
            marker_tensor(P, marker),
        ],
    )
    return path


def test_load_asks_the_rules_gate(tmp_path: Path) -> None:
    path = _fp8(tmp_path, {"format": "float8_e4m3fn", "full_precision_matrix_mult": "yes"})
    why = numeric_refusal(load(path).layer(P).layer)
    assert why and why.startswith("the rules reject it: QC2")
    with pytest.raises(NumericError, match=f"{P} is skipped: the rules reject it"):
        load(path).layer(P).dequantize()


def test_a_passing_layer_dequantizes_through_the_gate(tmp_path: Path) -> None:
    path = _fp8(tmp_path, {"format": "float8_e4m3fn"})
    assert np.array_equal(load(path).layer(P).dequantize(), ONES)


def test_the_model_asks_the_gate_its_caller_gives(tmp_path: Path) -> None:
    path = _fp8(tmp_path, {"format": "float8_e4m3fn"})
    asked: list[str] = []

    def refuse(layer: object) -> str:
        asked.append(getattr(layer, "prefix", ""))
        return "the caller says no"

    with load_checkpoint([str(path)]) as ck:
        assert np.array_equal(ck.layer(P).dequantize(), ONES)  # no gate: no refusal
        ck.numeric_gate = refuse
        with pytest.raises(NumericError, match="the caller says no"):
            ck.layer(P).dequantize()
    assert asked == [P]
