"""sglang's GPU decisions (issue 24), from the rows read in the 0.5.23 wheel: each requirement
with a refused (or emulated) case and the native one where it is met. The files are text
encoders (`as_text_encoder`) where the format needs sglang's marker path: a DiT of no detected
family is read by --transformer-weights-path, which refuses undeclared quantized tensors (QC631)
and so stops the whole load on every device."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.runtimes.sglang_gpu import RULES

from .._build import P, fp8, int8, mxfp8, nvfp4, w4a4, w4a8
from ..sglang.loader_helpers import as_text_encoder
from .test_comfyui_gpu import entries, modes


def test_nvfp4_refuses_below_blackwell(tmp_path: Path) -> None:
    got = modes(tmp_path, nvfp4, "rtx4090", "b200", "mi300x", target="sglang")
    assert got == {"rtx4090": "refused", "b200": "native", "mi300x": "refused"}
    e = entries(tmp_path / "r", nvfp4, "rtx4090", target="sglang")["rtx4090"]
    assert "requires NVIDIA compute capability 10.0+" in e["execution"][P]["reason"]


def test_nvfp4_full_precision_marker_dequantizes(tmp_path: Path) -> None:
    mark = {"format": "nvfp4", "full_precision_matrix_mult": True}
    got = modes(tmp_path, lambda: nvfp4(mark=mark), "rtx4090", "b200", target="sglang")
    assert got == {"rtx4090": "emulated", "b200": "emulated"}


@pytest.mark.parametrize(
    ("gpu", "mode", "says"),
    [
        ("sm_89", "native", "FP8 scaled matmul"),
        ("sm_86", "native", "Marlin"),
        ("sm_75", "refused", "fp8e4nv"),
        ("mi300x", "native", "fnuz"),
        ("gfx1100", "refused", "GUESS"),
        ("directml", "refused", "no DirectML platform"),
    ],
)
def test_fp8(tmp_path: Path, gpu: str, mode: str, says: str) -> None:
    e = entries(tmp_path, as_text_encoder(fp8), gpu, target="sglang")[gpu]["execution"][P]
    assert e["mode"] == mode and says in e["reason"]


@pytest.mark.parametrize(
    ("make", "gpu", "mode"),
    [
        (w4a8, "sm_75", "refused"),
        (w4a8, "sm_80", "native"),
        (w4a8, "mps", "refused"),
        (w4a4, "sm_70", "refused"),
        (w4a4, "sm_75", "native"),
        (w4a4, "mps", "refused"),
        (int8, "sm_75", "native"),
        (mxfp8, "mps", "refused"),
    ],
)
def test_kitchen_configs(tmp_path: Path, make, gpu: str, mode: str) -> None:  # type: ignore[no-untyped-def]
    assert modes(tmp_path, as_text_encoder(make), gpu, target="sglang")[gpu] == mode


def test_mxfp8_on_blackwell_where_the_release_loads_it(tmp_path: Path) -> None:
    # 0.5.22 loads MXFP8; 0.5.23 (the default `sglang`) stops at weight load (QC615)
    got = modes(tmp_path, as_text_encoder(mxfp8), "b200", target="sglang@0.5.22")
    assert got == {"b200": "native"}


def test_every_row_says_how_it_was_established() -> None:
    assert all(r.reason.startswith(("[READ]", "[ISSUE]", "[GUESS]")) for r in RULES)
