"""`comfyui-cpu`: ComfyUI started with --cpu / --disable-dynamic-vram (safetensors.safe_open)
against `comfyui`, the default GPU setup (DynamicVRAM header parser without F8_E8M0).

Each difference has a failing and a passing case; everything else must follow ComfyUI,
including the per-release format steps (the fork carries ComfyUI's release records).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.runtimes import get_runtime

from .._build import P, file, fp8, int8, marker, t, w4a8

CPU = "comfyui-cpu"


def _status(tmp: Path, make, target: str) -> str:
    tmp.mkdir(parents=True, exist_ok=True)
    paths = [str(p) for p in file(make)(tmp)]
    return check_paths(paths, target=target).target_status(target)["status"]


def _mxfp8(scale_dtype: str) -> list:
    return [
        t(f"{P}.weight", "F8_E4M3", (128, 128)),
        t(f"{P}.weight_scale", scale_dtype, (128, 4)),
        marker(P, {"format": "mxfp8"}),
    ]


def test_record_names_its_loader() -> None:
    cpu, base = get_runtime(CPU), get_runtime("comfyui")
    assert cpu.based_on == "comfyui" and not cpu.default_target
    assert cpu.release_names() == base.release_names()
    assert "safe_open" in cpu.doc and "--cpu" in cpu.doc and "dequantized" in cpu.doc
    assert "default GPU setup" in base.doc and "DynamicVRAM" in base.doc


def test_unmarked_f8_e8m0_tensor_stops_only_the_default_loader(tmp_path: Path) -> None:
    def make() -> list:
        return [*fp8(), t("other.weight", "F8_E8M0", (4, 4))]

    assert _status(tmp_path / "a", make, "comfyui") == "fails"
    assert _status(tmp_path / "b", make, CPU) == "ok"


def test_mxfp8_e8m0_scales_load_under_safe_open(tmp_path: Path) -> None:
    # ComfyUI views MXFP8 scales as float8_e8m0fnu whatever their stored dtype
    assert _status(tmp_path / "a", lambda: _mxfp8("F8_E8M0"), "comfyui") == "fails"
    assert _status(tmp_path / "b", lambda: _mxfp8("F8_E8M0"), CPU) == "ok"
    # the passing twin: U8 scales, as the format stores them
    assert _status(tmp_path / "c", lambda: _mxfp8("U8"), CPU) == "ok"


def test_fp8_per_row_scale_fails_only_on_the_gpu_path(tmp_path: Path) -> None:
    def per_row() -> list:
        return fp8(scale=("F32", (64, 1)))

    assert _status(tmp_path / "a", per_row, "comfyui") == "fails"
    assert _status(tmp_path / "b", per_row, CPU) == "ok"
    # a per-row scale of the wrong length stays a failure on the CPU too
    assert _status(tmp_path / "c", lambda: fp8(scale=("F32", (32, 1))), CPU) == "fails"


def test_loader_independent_failures_follow_comfyui(tmp_path: Path) -> None:
    # a BF16 W4A8 channel scale fails the first forward whichever loader read it
    def make() -> list:
        return w4a8(channel="BF16")

    assert _status(tmp_path / "a", make, "comfyui") == "fails"
    assert _status(tmp_path / "b", make, CPU) == "fails"


@pytest.mark.parametrize(
    ("release", "want"), [("v0.16", "fails"), ("v0.27", "ok"), ("0271a469", "ok")]
)
def test_release_steps_hold_for_the_fork(tmp_path: Path, release: str, want: str) -> None:
    # int8_tensorwise arrived in v0.27: the fork must see the step at its own releases, not
    # its base's newest release
    assert _status(tmp_path, int8, f"{CPU}@{release}") == want
    assert _status(tmp_path / "base", int8, f"comfyui@{release}") == want
