"""ComfyUI started for real with the node pack (`make test-comfyui-integration`).

Skipped unless QUANTCHECK_COMFYUI_LIVE=1, QUANTCHECK_COMFYUI_FULL (a full ComfyUI checkout, e.g.
upstream 783545f6) and QUANTCHECK_COMFYUI_PYTHON (a venv's python with ComfyUI's requirements
and quantcheck; the make target builds one) are set. Starts `main.py --cpu` twice (guard off,
then QUANTCHECK_GUARD=1) with the pack in custom_nodes/ and the Flux examples as diffusion
models, and drives it through /object_info, /prompt and /history.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .comfyui_live import ComfyServer, check_prompt, error_message, prepare, unet_prompt

SOURCE = os.environ.get("QUANTCHECK_COMFYUI_FULL", "")
PYTHON = os.environ.get("QUANTCHECK_COMFYUI_PYTHON", "")
pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_COMFYUI_LIVE") != "1" or not SOURCE or not PYTHON,
    reason="set QUANTCHECK_COMFYUI_LIVE=1 QUANTCHECK_COMFYUI_FULL QUANTCHECK_COMFYUI_PYTHON "
    "(make test-comfyui-integration)",
)


def _server(tmp: Path, guard: str) -> Iterator[ComfyServer]:
    prepare(tmp)
    server = ComfyServer(Path(SOURCE), PYTHON, tmp, {"QUANTCHECK_GUARD": guard})
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComfyServer]:
    yield from _server(tmp_path_factory.mktemp("comfy-plain"), "0")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComfyServer]:
    yield from _server(tmp_path_factory.mktemp("comfy-guard"), "1")


def test_the_node_is_registered(plain: ComfyServer) -> None:
    info = plain.get("/object_info")["QuantcheckCheckModel"]
    assert info["display_name"] == "Check Quantized Model"
    assert info["output"] == ["STRING", "BOOLEAN"]
    options = info["input"]["required"]["model"][1]["options"]
    assert "diffusion_models/flux_broken.safetensors" in options
    assert "diffusion_models/flux_fp8.safetensors" in options


def test_the_node_reports_a_broken_and_a_clean_file(plain: ComfyServer) -> None:
    broken = plain.run(check_prompt("diffusion_models/flux_broken.safetensors"))
    assert broken["status"]["status_str"] == "success"
    assert "FAILS to load" in broken["outputs"]["1"]["text"][0]
    report = broken["outputs"]["2"]["text"][0]
    assert "QC301 companion-missing" in report and "comfyui-cpu@v0.31: fails" in report
    clean = plain.run(check_prompt("diffusion_models/flux_fp8.safetensors"))
    # ComfyUI --cpu at 783545f6 has no FP8 compute: the node says so (its own gates)
    assert clean["outputs"]["1"]["text"][0].endswith(": ok (10 layers emulated: float8_e4m3fn)")


def test_without_the_guard_comfyui_fails_far_from_the_cause(plain: ComfyServer) -> None:
    entry = plain.run(unet_prompt("flux_broken.safetensors"))
    assert entry["status"]["status_str"] == "error"
    assert "quantcheck" not in error_message(entry)
    assert "model_type FLUX" in plain.text_log()  # ComfyUI's detection took it for Flux


def test_the_guard_stops_the_broken_file_and_lets_the_clean_ones_load(
    guarded: ComfyServer,
) -> None:
    entry = guarded.run(unet_prompt("flux_broken.safetensors"))
    assert entry["status"]["status_str"] == "error"
    message = error_message(entry)
    assert message.startswith("quantcheck: flux_broken.safetensors will not load in ComfyUI")
    assert "QC301 companion-missing (single_blocks.0.linear2)" in message
    assert "fix:" not in message or "safe fix" in message
    for name in ("flux_bf16.safetensors", "flux_fp8.safetensors", "flux_nvfp4.safetensors"):
        ok = guarded.run(unet_prompt(name))
        assert ok["status"]["status_str"] == "success", error_message(ok)
        assert "ModelPatcher" in ok["outputs"]["2"]["text"][0]
    log = guarded.text_log()
    assert "QC304" in log  # the degrading finding is logged as a warning
    assert "10 layers in nvfp4 run emulated (supports_nvfp4_compute() is false on cpu)" in log
