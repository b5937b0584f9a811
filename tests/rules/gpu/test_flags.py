"""The launch switches of `--gpu ...,flags=` (issue 24 follow-up): the grammar, and what each
changes in ComfyUI's verdicts (`--supports-fp8-compute`, the Triton backend, DynamicVRAM), with
a failing and a passing case each. ComfyUI's own code decides the same under the same switches
in the GPU oracle (tests/rules/comfyui/diff, `make diff-comfyui`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.gpus import SpecError, expand_specs, parse_spec

from .._build import P, fp8, int8, mxfp8, t, w4a8
from .test_comfyui_gpu import entries, modes, reason

PLAIN_INT8 = {"format": "int8_tensorwise"}


def test_grammar() -> None:
    s = parse_spec("sm_86,flags=supports-fp8-compute+--disable_dynamic_vram")
    assert s.flags == {"supports-fp8-compute", "disable-dynamic-vram"}
    assert s.switches() == " with --disable-dynamic-vram --supports-fp8-compute"
    assert s.head_json()["flags"] == ["disable-dynamic-vram", "supports-fp8-compute"]
    assert parse_spec("sm_86").flags == frozenset() and parse_spec("sm_86").switches() == ""
    with pytest.raises(SpecError, match=r"does not know 'fast'.*accepted: supports-fp8-compute"):
        parse_spec("sm_86,flags=fast")
    # all,flags=... gives every class the switch
    specs = expand_specs(["all,flags=enable-triton-backend"])
    assert all(s.flags == {"enable-triton-backend"} for s in specs)
    assert specs[0].given.endswith(",flags=enable-triton-backend")


def _mxfp8_e8m0() -> list:
    layer = mxfp8()
    layer[1] = t(f"{P}.weight_scale", "F8_E8M0", (128, 4))
    return layer


@pytest.mark.parametrize(
    ("gpu", "mode", "says"),
    [
        ("sm_86", "emulated", "supports_fp8_compute() needs compute capability >= 8.9"),
        ("sm_86,flags=supports-fp8-compute", "emulated", "no FP8 kernel on sm_86"),
        ("gfx942", "emulated", "supports_fp8_compute() is False on AMD gfx942"),
        ("gfx942,flags=supports-fp8-compute", "native", "FP8 operands on gfx942"),
        ("gfx1100,flags=supports-fp8-compute", "emulated", "no FP8 kernel on gfx1100"),
        ("cpu,flags=supports-fp8-compute", "native", "FP8 operands on cpu"),
        ("mps,flags=supports-fp8-compute", "emulated", "no FP8 kernel on mps"),
        ("gfx950,rocm=6.4", "emulated", "no FP8 kernel on gfx950"),  # gate open, torch not
    ],
)
def test_supports_fp8_compute(tmp_path: Path, gpu: str, mode: str, says: str) -> None:
    e = entries(tmp_path, fp8, gpu)[gpu]
    assert (e["execution"][P]["mode"], says in e["execution"][P]["reason"]) == (mode, True)


def test_supports_fp8_compute_note(tmp_path: Path) -> None:
    e = entries(tmp_path, fp8, "rtx3090,flags=supports-fp8-compute")
    (entry,) = e.values()
    assert entry["summary"].startswith(
        "comfyui on rtx3090 (sm_86) with --supports-fp8-compute: 1 float8_e4m3fn layer emulated"
    )
    assert any("falls back to dequantization" in n for n in entry["notes"])


@pytest.mark.parametrize(
    ("gpu", "says"),
    [
        ("sm_89,cuda=12.8", "torch._int_mm"),  # the CUDA backend off, Triton off: eager
        ("sm_89,cuda=12.8,flags=enable-triton-backend", "comfy-kitchen Triton int8_linear"),
        ("sm_89,cuda=12.8,flags=enable-triton-backend+disable-triton-backend", "torch._int_mm"),
        ("sm_75,cuda=12.8,flags=enable-triton-backend", "torch._int_mm"),  # Triton from sm_80
        ("sm_89,flags=enable-triton-backend", "comfy-kitchen CUDA int8_linear"),  # cuda first
        ("mi300x,flags=enable-triton-backend", "comfy-kitchen Triton int8_linear"),
        ("mi300x", "torch._int_mm"),
    ],
)
def test_triton_backend(tmp_path: Path, gpu: str, says: str) -> None:
    assert says in reason(tmp_path, lambda: int8(mark=PLAIN_INT8), gpu)


def test_triton_takes_an_f16_scale_the_cuda_backend_refuses(tmp_path: Path) -> None:
    def make() -> list:
        return int8(mark=PLAIN_INT8, scale=("F16", (64, 1)))

    assert "torch._int_mm runs" in reason(tmp_path / "a", make, "rtx4090")
    why = reason(tmp_path / "b", make, "rtx4090,flags=enable-triton-backend")
    assert "CUDA int8_linear refuses it, comfy-kitchen Triton int8_linear" in why


def test_triton_w4a8_keeps_the_f32_s_channel_rule(tmp_path: Path) -> None:
    def make() -> list:
        return w4a8(channel="BF16")

    got = modes(tmp_path, make, "sm_89,cuda=12.8,flags=enable-triton-backend", "sm_89,cuda=12.8")
    assert set(got.values()) == {"refused"}
    plain = modes(tmp_path / "p", w4a8, "sm_89,cuda=12.8,flags=enable-triton-backend")
    assert set(plain.values()) == {"native"}


@pytest.mark.parametrize(
    ("gpu", "mode", "dynamic"),
    [
        ("b200", "refused", True),
        ("b200,flags=disable-dynamic-vram", "native", False),
        ("b200,flags=highvram", "native", False),
        ("b200,flags=novram+enable-dynamic-vram", "refused", True),
        ("sm_100,torch=2.7", "emulated", False),  # no DynamicVRAM before torch 2.8 (MXFP8: 2.10)
        ("mps", "emulated", False),
        ("mps,flags=enable-dynamic-vram", "refused", True),
        ("gfx1100", "emulated", False),
        ("gfx1100,rocm=7.14", "refused", True),  # DynamicVRAM on AMD from ROCm 7.14
    ],
)
def test_dynamic_vram_decides_e8m0(tmp_path: Path, gpu: str, mode: str, dynamic: bool) -> None:
    e = entries(tmp_path, _mxfp8_e8m0, gpu)[gpu]
    assert (e["execution"][P]["mode"], e["dynamic_vram"]) == (mode, dynamic)


def test_a_switch_the_runtime_does_not_read_is_noted(tmp_path: Path) -> None:
    gpu = "rtx3090,flags=supports-fp8-compute"
    (forge,) = entries(tmp_path, fp8, gpu, target="forge-neo").values()
    assert forge["execution"][P]["mode"] == "emulated"  # Forge Neo has no such switch
    assert "--supports-fp8-compute: not a forge-neo switch, ignored" in forge["notes"]
    (comfy,) = entries(tmp_path / "c", fp8, gpu).values()
    assert not any("ignored" in n for n in comfy["notes"])
