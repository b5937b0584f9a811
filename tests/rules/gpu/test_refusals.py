"""A layer the target cannot load or run is `refused` on every GPU (its failing finding's code
in the reason), unless the GPU rules model that finding per device: W4A8 with a non-F32
weight_s_channel (refused where native, dequantized where the format is disabled), MXFP8
with F8_E8M0 scales (the NVIDIA default loader only). Failing and passing cases each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.gpus import expand_specs

from .._build import P, awq, file, fp8, nvfp4, w4a4, w4a8, w6a8
from .test_comfyui_gpu import entries, modes
from .test_flags import _mxfp8_e8m0

OLD = "comfyui@0271a469"  # has no w6a8_int8 in QUANT_ALGOS (QC610)
Q = "blocks.1.attn.qkv"


def test_a_format_the_release_cannot_load_is_refused_everywhere(tmp_path: Path) -> None:
    got = entries(tmp_path / "a", w6a8, "rtx4090", "xpu", target=OLD)
    for e in got.values():
        assert e["execution"][P]["mode"] == "refused"
        assert e["execution"][P]["reason"].startswith(f"QC610 fails on {OLD}")
        assert e["formats"] == {"w6a8_int8": "refused"}
        assert e["layers"]["refused"] == 1 and e["layers"]["native"] == 0
        assert e["evidence"] == {"unverified": [], "read": []}  # the load failure: run
    # the release that loads it: the device gates decide again
    assert modes(tmp_path / "b", w6a8, "rtx4090", "xpu") == {
        "rtx4090": "native",
        "xpu": "emulated",
    }


def test_needs_line_does_not_claim_native_for_a_file_that_does_not_load(tmp_path: Path) -> None:
    paths = [str(p) for p in file(w6a8)(tmp_path)]
    old = check_paths(paths, target=OLD, gpus=expand_specs(["rtx4090"]))
    needs = old.gpu_needs[OLD]
    assert needs["compute_capability"] is None
    assert "natively from" not in needs["line"] and "QC610" in needs["line"]
    new = check_paths(paths, target="comfyui", gpus=expand_specs(["rtx4090"]))
    assert "runs every quantized layer natively from" in new.gpu_needs["comfyui"]["line"]


def test_a_file_level_failure_refuses_no_layer(tmp_path: Path) -> None:
    """QC609 (the file needs a newer ComfyUI) names no layer: the FP8 layer beside the w6a8
    one keeps its device verdict; the w6a8 layer is refused by its own QC610."""
    both = lambda: [*fp8(), *w6a8(Q)]  # noqa: E731
    old = entries(tmp_path / "a", both, "rtx4090", target=OLD)["rtx4090"]
    assert old["execution"][P]["mode"] == "native"
    assert old["execution"][Q]["mode"] == "refused"
    assert old["formats"] == {"float8_e4m3fn": "native", "w6a8_int8": "refused"}


@pytest.mark.parametrize(
    ("gpu", "bf16_mode", "f32_mode"),
    [
        ("rtx4090", "refused", "native"),
        ("sm_75", "refused", "native"),  # eager w4a8_int8_linear wants F32 too
        ("rx7900xtx", "refused", "native"),  # HIP [READ]
        ("cpu", "refused", "native"),
        ("xpu", "emulated", "emulated"),  # format disabled: the dequantized path runs it
    ],
)
def test_w4a8_with_a_bf16_s_channel_is_refused_where_native(
    tmp_path: Path, gpu: str, bf16_mode: str, f32_mode: str
) -> None:
    got = entries(tmp_path / "a", lambda: w4a8(channel="BF16"), gpu)[gpu]["execution"][P]
    assert got["mode"] == bf16_mode
    if bf16_mode == "refused":
        why = got["reason"]
        assert "NoCapableBackendError" in why and "weight_s_channel is BF16" in why
        assert ("[READ]" if gpu == "rx7900xtx" else "[RUN]") in why
    assert modes(tmp_path / "b", w4a8, gpu)[gpu] == f32_mode


def test_summary_marks_guesses_unverified_and_read_only_verdicts(tmp_path: Path) -> None:
    w6 = entries(tmp_path / "a", w6a8, "rtx4090")["rtx4090"]
    assert "[GUESS" in w6["execution"][P]["reason"]
    assert w6["evidence"] == {"unverified": ["w6a8_int8"], "read": []}
    assert w6["summary"].endswith("· unverified (a guess): w6a8_int8")
    f8 = entries(tmp_path / "b", fp8, "rtx4090")["rtx4090"]  # torch._scaled_mm: read only
    assert f8["execution"][P]["reason"].endswith("[READ]")
    assert f8["evidence"] == {"unverified": [], "read": ["float8_e4m3fn"]}
    assert "· [READ] code read, not run: float8_e4m3fn" in f8["summary"]
    # comfy-kitchen's registry pick (run by the oracle): no mark
    ck = entries(tmp_path / "c", w4a8, "rtx4090")["rtx4090"]
    assert ck["evidence"] == {"unverified": [], "read": []}
    assert "unverified" not in ck["summary"] and "[READ]" not in ck["summary"]


@pytest.mark.parametrize(
    ("make", "gpu", "mode", "tag"),
    [
        (w4a4, "sm_89,cuda=12.8", "emulated", "[READ]"),  # the eager fallback: read
        (w4a4, "sm_86", "native", ""),  # comfy-kitchen's CUDA pick: run
        (awq, "gfx1030", "native", "[READ]"),  # the HIP backend needs ROCm to load
        (awq, "t4", "emulated", "[READ]"),  # eager AWQ dequantizes: read
        (nvfp4, "rtx4090", "emulated", ""),  # ComfyUI's gate: run
    ],
)
def test_reasons_say_read_where_the_oracle_only_read(
    tmp_path: Path, make: Callable[[], list], gpu: str, mode: str, tag: str
) -> None:
    e = entries(tmp_path, make, gpu)[gpu]
    assert e["execution"][P]["mode"] == mode
    assert e["execution"][P]["reason"].endswith(tag) and ("[READ]" in e["summary"]) == bool(tag)


@pytest.mark.parametrize(
    ("make", "gpu", "codes", "mode"),
    [
        (lambda: w4a8(channel="BF16"), "xpu", {"QC305"}, "emulated"),
        (lambda: w4a8(channel="BF16"), "mps,torch=2.13", {"QC305"}, "emulated"),
        (lambda: w4a8(channel="BF16"), "directml", {"QC305"}, "emulated"),
        (_mxfp8_e8m0, "mi300x", {"QC305", "QC605"}, "emulated"),
        (_mxfp8_e8m0, "b200,flags=disable-dynamic-vram", {"QC305", "QC605"}, "native"),
    ],
)
def test_a_device_finding_that_does_not_stop_the_layer_here_says_so(
    tmp_path: Path, make: Callable[[], list], gpu: str, codes: set[str], mode: str
) -> None:
    """The target fails by QC305 / QC605 (their finding), but on this device the layer runs:
    the entry lists them under `not_blocking_here` and the summary says so; where the layer
    is refused they are not listed (the twin below)."""
    e = entries(tmp_path, make, gpu)[gpu]
    assert e["execution"][P]["mode"] == mode
    assert {f["code"] for f in e["not_blocking_here"]} == codes
    for code in codes:
        assert f"{code} does not stop its 1 layer on this device (1 {mode})" in e["summary"]


@pytest.mark.parametrize(
    ("make", "gpu"),
    [(lambda: w4a8(channel="BF16"), "rtx4090"), (_mxfp8_e8m0, "b200")],
)
def test_a_device_finding_that_stops_the_layer_is_not_listed(
    tmp_path: Path, make: Callable[[], list], gpu: str
) -> None:
    e = entries(tmp_path, make, gpu)[gpu]
    assert e["execution"][P]["mode"] == "refused"
    assert e["not_blocking_here"] == [] and "does not stop" not in e["summary"]
