"""The ComfyUI node pack outside ComfyUI: both node APIs, the guard's logic and its promises
(header and marker bytes only; what ComfyUI loads unchanged)."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from .fake_comfy import install, load_pack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "flux"


@pytest.fixture
def models(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    (root / "diffusion_models").mkdir(parents=True)
    for name in ("flux_fp8.safetensors", "flux_broken.safetensors"):
        shutil.copyfile(EXAMPLES / name, root / "diffusion_models" / name)
    return root


def test_v1_only_comfyui_gets_the_v1_mappings(
    monkeypatch: pytest.MonkeyPatch, models: Path
) -> None:
    install(monkeypatch, models, v3=False)
    pack = load_pack(monkeypatch)
    assert not hasattr(pack, "comfy_entrypoint")
    node = pack.NODE_CLASS_MAPPINGS["QuantcheckCheckModel"]
    assert pack.NODE_DISPLAY_NAME_MAPPINGS["QuantcheckCheckModel"] == "Check Quantized Model"
    assert pack.WEB_DIRECTORY == "./web" and (Path(pack.__file__).parent / "web").is_dir()
    spec = node.INPUT_TYPES()
    options = spec["required"]["model"][0]
    assert options == [
        "(none)",
        "diffusion_models/flux_broken.safetensors",
        "diffusion_models/flux_fp8.safetensors",
    ]
    assert spec["optional"]["path"][0] == "STRING" and spec["optional"]["lora"][0] == ["(none)"]
    assert (node.RETURN_TYPES, node.FUNCTION, node.OUTPUT_NODE) == (
        ("STRING", "BOOLEAN"),
        "check",
        True,
    )
    out = node().check("diffusion_models/flux_broken.safetensors")
    text, passed = out["result"]
    assert passed is False and "QC301 companion-missing" in text
    assert text.startswith("ComfyUI (--cpu) 0.33.0: release v0.31")
    assert out["ui"]["text"] == [
        "flux_broken.safetensors on comfyui-cpu@v0.31: FAILS to load (1 problem)"
    ]
    ok = node().check("(none)", path=str(models / "diffusion_models" / "flux_fp8.safetensors"))
    assert ok["result"][1] is True
    assert ok["ui"]["text"][0].endswith(": ok (10 layers emulated: float8_e4m3fn)")
    assert (
        ok["result"][0]
        .splitlines()[-1]
        .startswith("10 layers in float8_e4m3fn run emulated (supports_fp8_compute() is false on ")
    )


def test_v3_comfyui_gets_the_entrypoint(monkeypatch: pytest.MonkeyPatch, models: Path) -> None:
    install(monkeypatch, models, v3=True)
    pack = load_pack(monkeypatch)
    assert not hasattr(pack, "NODE_CLASS_MAPPINGS")  # ComfyUI would read V1 first
    import asyncio

    ext = asyncio.run(pack.comfy_entrypoint())
    (node,) = asyncio.run(ext.get_node_list())
    schema = node.define_schema().kwargs
    assert schema["node_id"] == "QuantcheckCheckModel"
    assert schema["display_name"] == "Check Quantized Model" and schema["is_output_node"]
    ids = [(i.args[0], type(i).__name__, i.kwargs.get("optional", False)) for i in schema["inputs"]]
    assert ids == [
        ("model", "Combo.Input", False),
        ("path", "String.Input", True),
        ("lora", "Combo.Input", True),
    ]
    assert [type(o).__name__ for o in schema["outputs"]] == ["String.Output", "Boolean.Output"]
    out = node.execute("diffusion_models/flux_broken.safetensors")
    assert out.args[1] is False and "QC301" in out.args[0]
    assert out.kwargs["ui"].args == (
        "flux_broken.safetensors on comfyui-cpu@v0.31: FAILS to load (1 problem)",
    )


def test_the_guard_is_off_by_default(monkeypatch: pytest.MonkeyPatch, models: Path) -> None:
    monkeypatch.delenv("QUANTCHECK_GUARD", raising=False)
    install(monkeypatch, models, v3=False)
    import comfy.sd  # the fake

    before = comfy.sd.load_diffusion_model
    pack = load_pack(monkeypatch)
    assert comfy.sd.load_diffusion_model is before
    assert [pack.guard.mode({"QUANTCHECK_GUARD": v}) for v in ("", "0", "1", "on", "warn")] == [
        "off",
        "off",
        "block",
        "block",
        "warn",
    ]


def _guarded(monkeypatch: pytest.MonkeyPatch, models: Path, value: str = "1") -> tuple[Any, Any]:
    monkeypatch.setenv("QUANTCHECK_GUARD", value)
    calls = install(monkeypatch, models, v3=False)
    pack = load_pack(monkeypatch)
    return pack, calls


def test_the_guard_stops_a_broken_model_before_its_weights(
    monkeypatch: pytest.MonkeyPatch, models: Path
) -> None:
    pack, calls = _guarded(monkeypatch, models)
    import comfy.sd

    broken = str(models / "diffusion_models" / "flux_broken.safetensors")
    with pytest.raises(pack.guard.QuantcheckGuardError) as err:
        comfy.sd.load_diffusion_model(broken, model_options={})
    assert calls.unet == [] and calls.torch_file == []  # the original never ran
    text = str(err.value)
    assert text.splitlines()[0] == (
        "quantcheck: flux_broken.safetensors will not load in ComfyUI 0.33.0 (target "
        "comfyui-cpu@v0.31): 1 problem [ComfyUI (--cpu) 0.33.0: release v0.31]"
    )
    assert "  QC301 companion-missing (single_blocks.0.linear2)" in text
    assert f"full report: quantcheck check {broken} --target comfyui-cpu@v0.31" in text
    assert isinstance(err.value, ValueError)


def test_the_guard_passes_the_call_through_unchanged(
    monkeypatch: pytest.MonkeyPatch, models: Path
) -> None:
    pack, calls = _guarded(monkeypatch, models)
    import comfy.sd

    checked: list[str] = []
    real = pack.guard._check
    monkeypatch.setattr(pack.guard, "_check", lambda p: checked.append(p) or real(p))
    clean = str(models / "diffusion_models" / "flux_fp8.safetensors")
    opts = {"dtype": "x"}
    got = comfy.sd.load_diffusion_model(clean, model_options=opts)
    assert got is calls.returned[-1]  # the very object ComfyUI's loader returned
    assert calls.unet == [((clean,), {"model_options": opts})]
    assert calls.unet[0][1]["model_options"] is opts
    assert checked == [clean]  # the inner load_torch_file did not check it again
    comfy.sd.load_diffusion_model(clean, model_options=opts)
    assert checked == [clean]  # an unchanged file is checked once


def test_the_guard_checks_text_encoders_and_ignores_other_files(
    monkeypatch: pytest.MonkeyPatch, models: Path, tmp_path: Path
) -> None:
    pack, calls = _guarded(monkeypatch, models)
    import comfy.utils

    te = models / "text_encoders" / "te_broken.safetensors"
    shutil.copyfile(EXAMPLES / "flux_broken.safetensors", te)
    with pytest.raises(pack.guard.QuantcheckGuardError):
        comfy.utils.load_torch_file(str(te), safe_load=True)
    elsewhere = tmp_path / "vae_or_lora.safetensors"  # not a diffusion model or text encoder
    shutil.copyfile(EXAMPLES / "flux_broken.safetensors", elsewhere)
    assert comfy.utils.load_torch_file(str(elsewhere)) is calls.returned[-1]


def test_warn_mode_logs_instead_of_raising(
    monkeypatch: pytest.MonkeyPatch, models: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _pack, calls = _guarded(monkeypatch, models, "warn")
    import comfy.sd

    broken = str(models / "diffusion_models" / "flux_broken.safetensors")
    with caplog.at_level("WARNING", logger="quantcheck.guard"):
        comfy.sd.load_diffusion_model(broken)
    assert len(calls.unet) == 1
    assert "QC301" in caplog.text and "QC304" in caplog.text  # blocking, then degrading
    assert "in float8_e4m3fn run emulated" in caplog.text  # what this device computes emulated


def _allowed_ranges(path: Path) -> list[tuple[int, int]]:
    """The header and each marker tensor's bytes: all the guard may read."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    out = [(0, 8 + n)]
    for name, info in header.items():
        if name.endswith(".comfy_quant"):
            a, b = info["data_offsets"]
            out.append((8 + n + a, 8 + n + b))
    return out


def test_the_guard_reads_only_header_and_marker_bytes(
    monkeypatch: pytest.MonkeyPatch, models: Path
) -> None:
    pack, _ = _guarded(monkeypatch, models)
    path = models / "diffusion_models" / "flux_fp8.safetensors"
    assert path.stat().st_size > 1 << 20  # larger than quantcheck reads whole
    reads: list[tuple[int, int]] = []
    pread, read = os.pread, os.read

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        reads.append((offset, offset + n))
        return pread(fd, n, offset)

    def counting_read(fd: int, n: int) -> bytes:
        reads.append((-1, n))
        return read(fd, n)

    monkeypatch.setattr(os, "pread", counting_pread)
    monkeypatch.setattr(os, "read", counting_read)
    pack.guard.check_file(str(path))
    allowed = _allowed_ranges(path)
    assert reads, "the guard read nothing"
    outside = [r for r in reads if not any(a <= r[0] and r[1] <= b for a, b in allowed)]
    assert outside == []
    assert sum(b - a for a, b in reads) < path.stat().st_size // 50


def test_a_lora_is_checked_on_the_last_model_once_the_check_takes_lora(
    monkeypatch: pytest.MonkeyPatch, models: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _pack, calls = _guarded(monkeypatch, models)
    import comfy.sd
    import comfy.utils

    import quantcheck

    base = str(models / "diffusion_models" / "flux_fp8.safetensors")
    lora = models / "loras" / "style.safetensors"
    shutil.copyfile(EXAMPLES / "flux_bf16.safetensors", lora)
    comfy.sd.load_diffusion_model(base)
    asked: list[tuple[list[str], str]] = []
    real = quantcheck.check

    def without_lora(path: list[str], target: str = "default", deep: bool = False) -> object:
        asked.append((path, ""))
        return real(path, target=target)

    monkeypatch.setattr(quantcheck, "check", without_lora)
    assert comfy.utils.load_torch_file(str(lora)) is calls.returned[-1]
    assert asked == []  # no LoRA dimension yet: the LoRA is not checked

    def with_lora(
        path: list[str], target: str = "default", deep: bool = False, lora: str = ""
    ) -> object:
        asked.append((path, lora))  # stands for a LoRA finding: a degraded layer (QC304)
        return real([str(EXAMPLES / "flux_broken.safetensors")], target=target)

    monkeypatch.setattr(quantcheck, "check", with_lora)
    with caplog.at_level("WARNING", logger="quantcheck.guard"):
        assert comfy.utils.load_torch_file(str(lora)) is calls.returned[-1]
    assert asked == [([base], str(lora))]
    assert "quantcheck: LoRA style.safetensors on flux_fp8.safetensors:   QC304" in caplog.text
