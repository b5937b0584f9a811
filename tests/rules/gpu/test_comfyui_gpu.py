"""ComfyUI's GPU decisions (issue 24): each gate and fallback has a failing and a passing case
(emulated / refused against native on the class where it opens)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs

from .._build import P, awq, bf16, file, fp8, int8, marker, mxfp8, nvfp4, t, w4a4, w4a8


def entries(tmp: Path, make: Callable[[], list], *gpus: str, target: str = "comfyui") -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    paths = [str(p) for p in file(make)(tmp)]
    report = check_paths(paths, target=target, gpus=expand_specs(list(gpus)))
    return report.target_status(target)["gpu"]  # type: ignore[no-any-return]


def modes(tmp: Path, make: Callable[[], list], *gpus: str, target: str = "comfyui") -> dict:
    """{gpu: mode of layer P}."""
    got = entries(tmp, make, *gpus, target=target)
    return {g: e["execution"][P]["mode"] for g, e in got.items()}


def reason(tmp: Path, make: Callable[[], list], gpu: str, target: str = "comfyui") -> str:
    return entries(tmp, make, gpu, target=target)[gpu]["execution"][P]["reason"]  # type: ignore[no-any-return]


def test_nvfp4_needs_blackwell(tmp_path: Path) -> None:
    got = modes(tmp_path, nvfp4, "rtx4090", "b200", "sm_120,cuda=12.8", "xpu", "mi300x")
    assert got == {
        "rtx4090": "emulated",
        "b200": "native",
        "sm_120,cuda=12.8": "native",
        "xpu": "emulated",
        "mi300x": "emulated",
    }
    why = reason(tmp_path / "r", nvfp4, "rtx4090")
    assert "supports_nvfp4_compute() needs compute capability >= 10.0" in why
    assert "get_disabled_quant_formats" in why and "_full_precision_mm" in why


@pytest.mark.parametrize(
    ("gpu", "mode"),
    [
        ("sm_86", "emulated"),
        ("sm_89", "native"),
        ("sm_89,torch=2.2", "emulated"),
        ("sm_89,torch=2.3", "native"),
        ("sm_89,torch=2.3,os=windows", "emulated"),
        ("sm_89,torch=2.4,os=windows", "native"),
        ("sm_90,torch=2.2", "native"),  # major >= 9: no torch condition
        ("gfx1201", "native"),  # SUPPORT_FP8_OPS
        ("gfx1201,torch=2.6", "emulated"),
        ("gfx1201,rocm=6.3", "emulated"),
        ("gfx1100", "emulated"),
        ("gfx942", "emulated"),
        ("mps", "emulated"),
        ("cpu", "emulated"),
    ],
)
def test_fp8_gate(tmp_path: Path, gpu: str, mode: str) -> None:
    assert modes(tmp_path, fp8, gpu)[gpu] == mode


def test_fp8_shape_fallback_is_per_layer(tmp_path: Path) -> None:
    def make() -> list:
        return [*fp8(n=40), *fp8("blocks.1.attn.qkv", n=64)]

    e = entries(tmp_path, make, "rtx4090")["rtx4090"]
    assert e["execution"][P]["mode"] == "emulated"
    assert "N=40, K=64" in e["execution"][P]["reason"]
    assert e["execution"]["blocks.1.attn.qkv"]["mode"] == "native"
    assert e["formats"] == {"float8_e4m3fn": "mixed"}
    assert e["layers"] == {"native": 1, "emulated": 1, "refused": 0, "depends": 0}
    assert e["peak_extra_bytes"] == 40 * 64 * 2


@pytest.mark.parametrize(
    ("gpu", "mode", "says"),
    [
        ("xpu", "emulated", "supports_int8_compute() is False on xpu"),
        ("directml", "emulated", "False on directml"),
        ("mps,torch=2.14", "emulated", "MPS before torch 2.15"),
        ("mps", "native", "torch._int_mm"),
        ("sm_75", "native", "comfy-kitchen CUDA int8_linear"),
        ("sm_89,cuda=12.8", "native", "CUDA backend is off"),
        ("rx7900xtx", "native", "HIP int8_linear"),
        ("mi300x", "native", "torch._int_mm"),
    ],
)
def test_int8_gate(tmp_path: Path, gpu: str, mode: str, says: str) -> None:
    e = entries(tmp_path, int8, gpu)[gpu]["execution"][P]
    assert e["mode"] == mode and says in e["reason"]


def test_int8_f16_scale_drops_to_torch_int_mm(tmp_path: Path) -> None:
    f16 = reason(tmp_path / "a", lambda: int8(scale=("F16", (64, 1))), "sm_89")
    f32 = reason(tmp_path / "b", int8, "sm_89")
    assert "weight_scale is F16" in f16 and "torch._int_mm" in f16
    assert f32 == "comfy-kitchen CUDA int8_linear"


@pytest.mark.parametrize(
    ("gpu", "mode", "says"),
    [
        ("sm_86", "native", "convrot_w4a4_linear"),
        ("sm_90", "native", "INT8 route"),
        ("sm_89,cuda=12.8", "emulated", "int4 codes into floats"),
        ("gfx942", "emulated", "int4 codes into floats"),  # CDNA: no HIP backend
        ("gfx1100", "native", "HIP convrot_w4a4_linear"),  # RDNA3: WMMA
        ("gfx1030", "emulated", "int4 codes into floats"),  # RDNA2: elementwise only
        ("xpu", "emulated", "supports_int8_compute"),
    ],
)
def test_convrot_w4a4(tmp_path: Path, gpu: str, mode: str, says: str) -> None:
    e = entries(tmp_path, w4a4, gpu)[gpu]["execution"][P]
    assert e["mode"] == mode and says in e["reason"]


@pytest.mark.parametrize(
    ("gpu", "mode"),
    [
        ("sm_89", "depends"),
        ("sm_75", "emulated"),
        ("sm_89,cuda=12.8", "emulated"),
        ("mps", "emulated"),
        ("rx9070xt", "native"),  # comfy-kitchen's HIP gemv: any batch
        ("gfx1030", "native"),  # RDNA2: gemv_awq_w4a16 is not a WMMA-only op
        ("mi300x", "emulated"),  # CDNA: no HIP backend
    ],
)
def test_awq_is_never_gated_but_needs_the_kernel(tmp_path: Path, gpu: str, mode: str) -> None:
    e = entries(tmp_path, awq, gpu)[gpu]["execution"][P]
    assert e["mode"] == mode
    if mode == "depends":
        assert "M <= 256 tokens" in e["reason"]


def test_w4a8_runs_through_torch_without_the_kernel(tmp_path: Path) -> None:
    got = modes(tmp_path, w4a8, "sm_75", "sm_86", "xpu")
    assert got == {"sm_75": "native", "sm_86": "native", "xpu": "emulated"}


def test_mxfp8(tmp_path: Path) -> None:
    def e8m0() -> list:
        return [
            t(f"{P}.weight", "F8_E4M3", (128, 128)),
            t(f"{P}.weight_scale", "F8_E8M0", (128, 4)),
            marker(P, {"format": "mxfp8"}),
        ]

    assert modes(tmp_path / "a", mxfp8, "b200", "b200,torch=2.9", "mi300x") == {
        "b200": "native",
        "b200,torch=2.9": "emulated",
        "mi300x": "emulated",
    }
    refused = entries(tmp_path / "b", e8m0, "b200", "mi300x")
    assert refused["b200"]["execution"][P]["mode"] == "refused"
    assert "--disable-dynamic-vram" in refused["b200"]["execution"][P]["reason"]
    # off NVIDIA the default loader is safe_open: the layer loads (and is emulated)
    assert refused["mi300x"]["execution"][P]["mode"] == "emulated"


def test_full_precision_marker_is_emulated_everywhere(tmp_path: Path) -> None:
    mark = {"format": "nvfp4", "full_precision_matrix_mult": True}
    got = entries(tmp_path, lambda: nvfp4(mark=mark), "b200")["b200"]["execution"][P]
    assert got["mode"] == "emulated" and "full_precision_matrix_mult" in got["reason"]
    assert modes(tmp_path / "b", nvfp4, "b200") == {"b200": "native"}


def test_entry_shape_and_memory(tmp_path: Path) -> None:
    def make() -> list:
        return [*fp8(n=64, k=32), *bf16("blocks.0.norm", 8, 16)]

    got = entries(tmp_path, make, "sm_86", "cpu")
    e = got["sm_86"]
    for key in (
        "spec", "vendor", "compute_capability", "torch", "cuda", "formats", "layers",
        "weight_bytes", "peak_extra_bytes", "notes", "execution",
    ):  # fmt: skip
        assert key in e, key
    assert (e["spec"], e["vendor"], e["compute_capability"], e["torch"], e["cuda"]) == (
        "sm_86", "nvidia", "8.6", "2.15", "13.0",
    )  # fmt: skip
    assert e["execution"][P] == {
        "mode": "emulated",
        "reason": e["execution"][P]["reason"],
        "lora_mode": None,
    }
    stored = 64 * 32 + 4  # F8 weight + F32 scale (the marker is not a weight)
    assert e["weight_bytes"] == stored + 8 * 16 * 2  # the BF16 layer as BF16
    assert got["cpu"]["weight_bytes"] == stored + 8 * 16 * 4  # ComfyUI on the CPU: F32
    assert e["peak_extra_bytes"] == 64 * 32 * 2
    assert any("activations" in n and "not included" in n for n in e["notes"])


def test_summary_line(tmp_path: Path) -> None:
    def make() -> list:
        return [*nvfp4(), *int8("blocks.1.attn.qkv")]

    e = entries(tmp_path, make, "rtx4090")["rtx4090"]
    assert e["summary"].startswith(
        "comfyui on rtx4090 (sm_89): 1 nvfp4 layer emulated — dequantized every step, slower "
        "than BF16; 1 layer native · weights "
    )
    assert e["summary"].endswith("transient; activations not included) · known issues: QC803")


def test_no_gpu_no_entry(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    paths = [str(p) for p in file(nvfp4)(tmp_path)]
    assert "gpu" not in check_paths(paths).target_status("comfyui")


def test_needs(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    paths = [str(p) for p in file(nvfp4)(tmp_path)]
    st: dict[str, Any] = check_paths(paths, gpus=expand_specs(["rtx4090"])).target_status("comfyui")
    needs = st["gpu_needs"]
    assert (needs["class"], needs["compute_capability"]) == ("sm_100", "10.0")
    assert needs["line"].startswith("comfyui runs every quantized layer natively from sm_100 (b200")
    assert needs["advice"] == [
        {"gpu": "rtx4090", "label": "rtx4090 (sm_89)", "not_native": ["nvfp4"],
         "alternative": "float8_e4m3fn"}
    ]  # fmt: skip
    assert needs["advice_lines"] == [
        "on rtx4090 (sm_89) the nvfp4 layers are not all native; a float8_e4m3fn file of the "
        "same model runs natively there"
    ]


def test_summary_compares_with_the_cards_memory() -> None:
    from quantcheck.gpus import parse_spec
    from quantcheck.rules.gpu.entry import summary_line

    fits = summary_line("comfyui", parse_spec("rtx4090"), {"nvfp4": {"native": 3}}, 20 << 30, 0)
    assert fits.endswith("weights 20 GiB of its 24 GiB (activations not included)")
    over = summary_line(
        "comfyui", parse_spec("rtx4090"), {"nvfp4": {"native": 3}}, 23 << 30, 2 << 30
    )
    assert "weights 23 GiB, more than its 24 GiB (+2 GiB transient" in over
    bare = summary_line("comfyui", parse_spec("sm_89"), {"nvfp4": {"native": 3}}, 23 << 30, 0)
    assert bare.endswith("weights 23 GiB (activations not included)")
