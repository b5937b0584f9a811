"""The GPU decisions of the runtimes beside ComfyUI and sglang (issue 24 item "the others where
their code has device gates"): each runtime's device rule with a case on each side of it.
Where the runtime's code runs on the CPU (DiffSynth-Studio, InvokeAI) the same verdicts are
compared with it in tests/rules/{diffsynth,invokeai}/diff (`make diff-consumers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._build import INT8_CONVROT, P, fp8, int8, mxfp8, w4a4
from .test_comfyui_gpu import entries, modes, reason
from .test_flags import _mxfp8_e8m0

PLAIN_INT8 = {"format": "int8_tensorwise"}
FPMM_FP8 = {"format": "float8_e4m3fn", "full_precision_matrix_mult": True}


# --- Forge Neo: ComfyUI's gates and kernels, its own formats, loader, Triton and dtype -------


def test_forge_neo_inherits_comfyui_gates(tmp_path: Path) -> None:
    got = modes(tmp_path, fp8, "rtx3090", "rtx4090", target="forge-neo")
    assert got == {"rtx3090": "emulated", "rtx4090": "native"}


def test_forge_neo_loads_e8m0_scales_comfyui_refuses(tmp_path: Path) -> None:
    assert modes(tmp_path / "f", _mxfp8_e8m0, "b200", target="forge-neo") == {"b200": "native"}
    assert modes(tmp_path / "c", _mxfp8_e8m0, "b200") == {"b200": "refused"}


def test_forge_neo_refuses_formats_its_quant_algos_lacks(tmp_path: Path) -> None:
    got = entries(tmp_path, w4a4, "rtx4090", target="forge-neo")["rtx4090"]
    assert got["execution"][P]["mode"] == "refused"
    assert got["execution"][P]["reason"].startswith("QC701 fails on forge-neo")


@pytest.mark.parametrize(
    ("gpu", "says"),
    [
        ("sm_89,cuda=12.8", "comfy-kitchen Triton int8_linear"),  # Triton on by default
        ("sm_89,cuda=12.8,flags=disable-triton-backend", "torch._int_mm"),
        ("sm_89,cuda=12.8,os=windows", "torch._int_mm"),  # no triton on Windows [GUESS]
    ],
)
def test_forge_neo_keeps_triton_on(tmp_path: Path, gpu: str, says: str) -> None:
    assert says in reason(tmp_path, lambda: int8(mark=PLAIN_INT8), gpu, target="forge-neo")
    # ComfyUI: off unless --enable-triton-backend
    assert "torch._int_mm" in reason(tmp_path / "c", lambda: int8(mark=PLAIN_INT8), gpu)


def test_forge_neo_holds_unquantized_weights_in_f32_before_ampere(tmp_path: Path) -> None:
    def make() -> list:
        from .._build import bf16

        return [*int8(), *bf16("blocks.9.mlp", 64, 64)]

    forge = entries(tmp_path, make, "t4", "rtx3090", target="forge-neo")
    comfy = entries(tmp_path / "c", make, "t4", "rtx3090")
    assert forge["t4"]["compute_dtype"] == "F32" and comfy["t4"]["compute_dtype"] == "F16"
    assert forge["rtx3090"]["compute_dtype"] == "BF16"
    assert forge["t4"]["weight_bytes"] - comfy["t4"]["weight_bytes"] == 64 * 64 * 2


# --- DiffSynth-Studio: comfy-kitchen without ComfyUI's gates --------------------------------


@pytest.mark.parametrize(
    ("gpu", "mode", "says"),
    [
        ("rtx4090", "native", "torch._scaled_mm (FP8 tensor cores)"),
        ("rtx3090", "emulated", "no FP8 kernel on sm_86"),  # no gate: torch's error decides
        ("mps", "emulated", "no FP8 kernel on mps"),
    ],
)
def test_diffsynth_fp8_has_no_gate(tmp_path: Path, gpu: str, mode: str, says: str) -> None:
    e = entries(tmp_path, fp8, gpu, target="diffsynth")[gpu]["execution"][P]
    assert (e["mode"], says in e["reason"]) == (mode, True)
    assert "get_disabled_quant_formats" not in e["reason"]


def test_diffsynth_ignores_full_precision_matrix_mult(tmp_path: Path) -> None:
    make = lambda: fp8(mark=FPMM_FP8)  # noqa: E731
    assert modes(tmp_path, make, "rtx4090", target="diffsynth") == {"rtx4090": "native"}
    assert modes(tmp_path / "c", make, "rtx4090") == {"rtx4090": "emulated"}


def test_diffsynth_cuda_switch_and_triton(tmp_path: Path) -> None:
    make = lambda: int8(mark=PLAIN_INT8)  # noqa: E731
    assert "CUDA int8_linear" in reason(tmp_path / "a", make, "rtx4090", target="diffsynth")
    why = reason(tmp_path / "b", make, "sm_89,cuda=12.8", target="diffsynth")
    assert "comfy-kitchen Triton int8_linear" in why


# --- InvokeAI: no device gate, dequantized when loaded ---------------------------------------


def test_invokeai_dequantizes_at_load_everywhere(tmp_path: Path) -> None:
    got = entries(tmp_path, lambda: fp8(n=64, k=128), "rtx4090", "mps", target="invokeai")
    for e in got.values():
        assert e["execution"][P]["mode"] == "emulated"
        assert "_dequantize_comfyui_fp8" in e["execution"][P]["reason"]
        assert e["peak_extra_bytes"] == 0  # nothing dequantized per call
        assert e["weight_bytes"] == 64 * 128 * 2  # held as BF16, scale dropped
        assert "dequantized to BF16 when loaded" in e["summary"]
    comfy = entries(tmp_path / "c", lambda: fp8(n=64, k=128), "rtx4090")["rtx4090"]
    assert comfy["weight_bytes"] == 64 * 128 + 4  # held as stored


# --- SD.Next: dequantized by default; its Quantized MatMul setting ---------------------------

MATMUL = "flags=sdnq-quantized-matmul"


@pytest.mark.parametrize(
    ("make", "gpu", "mode"),
    [
        (lambda: int8(mark=PLAIN_INT8), "rtx4090", "emulated"),  # the default setting
        (lambda: int8(mark=PLAIN_INT8), f"rtx4090,{MATMUL}", "native"),
        (fp8, f"rtx3090,{MATMUL}", "emulated"),  # is_fp8_mm_supported: sm_89+
        (fp8, f"rtx4090,{MATMUL}", "native"),
        (lambda: fp8(n=16), f"rtx4090,{MATMUL}", "emulated"),  # N < 32: no quantized matmul
        (lambda: fp8(mark=FPMM_FP8), f"rtx4090,{MATMUL}", "emulated"),
    ],
)
def test_sdnext(tmp_path: Path, make, gpu: str, mode: str) -> None:  # type: ignore[no-untyped-def]
    assert modes(tmp_path, make, gpu, target="sdnext")[gpu] == mode


def test_sdnext_default_says_why(tmp_path: Path) -> None:
    e = entries(tmp_path, fp8, "rtx4090", target="sdnext")["rtx4090"]
    assert "sdnq_quantize_matmul_mode" in e["execution"][P]["reason"]
    assert any("flags=sdnq-quantized-matmul" in n for n in e["notes"])


# --- stable-diffusion.cpp: FP8 to F16 at load; INT8 on the ggml backend ----------------------


def test_sdcpp_fp8_is_f16_in_memory(tmp_path: Path) -> None:
    e = entries(tmp_path, lambda: fp8(n=64, k=128), "rtx4090", target="sdcpp")["rtx4090"]
    assert e["execution"][P]["mode"] == "emulated"
    assert e["weight_bytes"] == 64 * 128 * 2 and e["peak_extra_bytes"] == 0
    assert "GGML_TYPE_F16" in e["execution"][P]["reason"]


@pytest.mark.parametrize(
    ("n", "gpu", "mode"),
    [(64, "rtx4090", "native"), (42, "rtx4090", "emulated"), (64, "mps", "emulated")],
)
def test_sdcpp_int8(tmp_path: Path, n: int, gpu: str, mode: str) -> None:
    make = lambda: int8(n=n, k=64, mark=INT8_CONVROT)  # noqa: E731
    e = entries(tmp_path, make, gpu, target="sdcpp")[gpu]
    assert e["execution"][P]["mode"] == mode
    if mode == "emulated":
        assert "run on ggml's CPU backend" in e["summary"]


# --- musubi-tuner: its Triton kernel on CUDA / ROCm tensors ----------------------------------


@pytest.mark.parametrize(
    ("gpu", "mode"),
    [
        ("rtx4090", "native"),
        ("mi300x", "native"),
        ("rtx4090,os=windows", "emulated"),  # triton-windows not assumed
        ("mps", "emulated"),
        ("xpu", "emulated"),
    ],
)
def test_musubi(tmp_path: Path, gpu: str, mode: str) -> None:
    assert modes(tmp_path, int8, gpu, target="musubi")[gpu] == mode


def test_musubi_refuses_other_formats(tmp_path: Path) -> None:
    assert modes(tmp_path, mxfp8, "b200", target="musubi") == {"b200": "refused"}
