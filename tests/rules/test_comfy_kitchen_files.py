"""Files quantized by comfy-kitchen 0.2.40 (CPU eager) and saved as ComfyUI's saver does:
per-target verdicts of `check` (comfy-formats.md §3, §4).

Markers are what ComfyUI writes: `{"format": ...}` plus the group / convrot keys, encoded as
`torch.tensor(list(json.dumps(conf).encode()), dtype=torch.uint8)`; W4A8 gets no `convrot`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.compat.sglang import simulate_load
from quantcheck.io.header import read_header
from quantcheck.io.source import LocalFile
from quantcheck.runtimes import default_targets

from .sglang.loader_helpers import core, marker_path

pytestmark = pytest.mark.oracle
P = "blocks.0.attn.qkv"

DEFAULT = default_targets()  # other runtimes' effects: their own tests


def save(
    oracle: Any,
    tmp: Path,
    n: int,
    k: int,
    layout: str,
    conf: dict[str, Any],
    *,
    e8m0_as_u8: bool = False,
    **kw: Any,
) -> str:
    torch, qtensor, save_file = oracle
    gen = torch.Generator().manual_seed(n * 1000 + k)
    w = (0.05 * torch.randn(n, k, generator=gen)).to(torch.bfloat16)
    sd = qtensor.from_float(w, layout, **kw).state_dict("weight")
    tensors = {f"{P}.{name}": v.contiguous() for name, v in sd.items()}
    if e8m0_as_u8:
        tensors[f"{P}.weight_scale"] = tensors[f"{P}.weight_scale"].view(torch.uint8)
    tensors[f"{P}.comfy_quant"] = torch.tensor(
        list(json.dumps(conf).encode("utf-8")), dtype=torch.uint8
    )
    path = tmp / "ck.safetensors"
    save_file(tensors, str(path))
    return str(path)


def verdict(path: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(status, effects by code) for sglang's marker path and ComfyUI: the comfy-kitchen
    layouts as the markers describe them (sglang's loaders that never read the markers name
    theirs, `tests/rules/sglang/test_loader_findings.py`)."""
    report = check_paths([path])
    status = {"sglang": marker_path(report), "comfyui": report.target_status("comfyui")["status"]}
    effects = {
        d.code: {t: e.value for t, e in d.effective_effects.items() if t in DEFAULT}
        for d in core(report.diagnostics)
    }
    return status, effects


def dtypes(path: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    src = LocalFile(path)
    try:
        h = read_header(src)
    finally:
        src.close()
    return {n.removeprefix(P + "."): (t.dtype, t.shape) for n, t in h.tensors.items()}


def test_nvfp4_aligned_both_ok(oracle: Any, tmp_path: Path) -> None:
    path = save(oracle, tmp_path, 256, 512, "TensorCoreNVFP4Layout", {"format": "nvfp4"})
    assert dtypes(path)["weight_scale"] == ("F8_E4M3", (256, 32))
    assert verdict(path) == ({"sglang": "ok", "comfyui": "ok"}, {})
    assert simulate_load([path]).ok


def test_nvfp4_padded_fails_sglang_only(oracle: Any, tmp_path: Path) -> None:
    path = save(oracle, tmp_path, 100, 200, "TensorCoreNVFP4Layout", {"format": "nvfp4"})
    assert dtypes(path)["weight"] == ("U8", (112, 104))
    assert dtypes(path)["weight_scale"] == ("F8_E4M3", (128, 16))
    status, effects = verdict(path)
    assert status == {"sglang": "fails", "comfyui": "ok"}
    assert effects == {
        "QC308": {"sglang": "fails", "comfyui": "none"},
    }
    assert not simulate_load([path]).ok


def test_w4a8_as_comfyui_saves_it(oracle: Any, tmp_path: Path) -> None:
    conf = {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 256}
    path = save(
        oracle, tmp_path, 256, 512, "AsymW4A8Int8Layout", conf, group_size=16, convrot_groupsize=256
    )
    status, effects = verdict(path)
    assert status == {"sglang": "fails", "comfyui": "ok"}
    assert effects == {"QC225": {"sglang": "fails", "comfyui": "none"}}
    outcome = simulate_load([path])
    assert (outcome.ok, outcome.stage) == (False, "constructor")
    assert "must set convrot=true" in (outcome.message or "")


def test_w4a8_with_convrot_key_both_ok(oracle: Any, tmp_path: Path) -> None:
    conf = {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 256, "convrot": True}
    path = save(
        oracle, tmp_path, 256, 512, "AsymW4A8Int8Layout", conf, group_size=16, convrot_groupsize=256
    )
    assert set(dtypes(path)) == {
        "weight",
        "weight_s_rel",
        "weight_s_channel",
        "weight_codebook",
        "comfy_quant",
    }
    assert verdict(path) == ({"sglang": "ok", "comfyui": "ok"}, {})
    assert simulate_load([path]).ok


def test_w4a8_asymmetric(oracle: Any, tmp_path: Path) -> None:
    conf = {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 256}
    path = save(
        oracle,
        tmp_path,
        256,
        512,
        "AsymW4A8Int8Layout",
        conf,
        group_size=16,
        convrot_groupsize=256,
        symmetric=False,
    )
    assert dtypes(path)["weight_correction"] == ("BF16", (32, 256))
    status, effects = verdict(path)
    assert status == {"sglang": "fails", "comfyui": "degraded"}
    assert effects["QC313"] == {"sglang": "none", "comfyui": "degraded"}
    assert effects["QC305"] == {"sglang": "fails", "comfyui": "none"}
    assert set(effects) == {"QC305", "QC313", "QC225"}


def test_int8_convrot_rowwise_both_ok(oracle: Any, tmp_path: Path) -> None:
    conf = {"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": 256}
    path = save(
        oracle,
        tmp_path,
        256,
        512,
        "TensorWiseINT8Layout",
        conf,
        per_channel=True,
        convrot=True,
        convrot_groupsize=256,
    )
    assert dtypes(path)["weight_scale"] == ("F32", (256, 1))
    assert verdict(path) == ({"sglang": "ok", "comfyui": "ok"}, {})
    assert simulate_load([path]).ok


def test_int8_scalar_linear_degrades_sglang(oracle: Any, tmp_path: Path) -> None:
    path = save(oracle, tmp_path, 256, 512, "TensorWiseINT8Layout", {"format": "int8_tensorwise"})
    assert dtypes(path)["weight_scale"] == ("F32", ())
    status, effects = verdict(path)
    assert status == {"sglang": "degraded", "comfyui": "ok"}
    assert effects == {"QC316": {"sglang": "degraded", "comfyui": "none"}}


def test_fp8_both_ok(oracle: Any, tmp_path: Path) -> None:
    torch = oracle[0]
    path = save(
        oracle,
        tmp_path,
        96,
        512,
        "TensorCoreFP8Layout",
        {"format": "float8_e4m3fn"},
        dtype=torch.float8_e4m3fn,
    )
    assert verdict(path) == ({"sglang": "ok", "comfyui": "ok"}, {})


def test_convrot_w4a4_both_ok(oracle: Any, tmp_path: Path) -> None:
    path = save(
        oracle,
        tmp_path,
        256,
        512,
        "TensorCoreConvRotW4A4Layout",
        {"format": "convrot_w4a4", "convrot_groupsize": 256},
        convrot_groupsize=256,
    )
    assert dtypes(path)["weight_scale"] == ("F32", (256,))
    assert verdict(path) == ({"sglang": "ok", "comfyui": "ok"}, {})


def test_mxfp8_e8m0_scale(oracle: Any, tmp_path: Path) -> None:
    """ck returns float8_e8m0fnu scales; save_file writes them as F8_E8M0. ComfyUI's own
    safetensors reader has no F8_E8M0 (comfy-formats.md §1.3): QC305 fails ComfyUI (safe relabel
    to U8). sglang wants U8 (§3.5) but loads it value-cast (fsdp_load: every scale becomes
    int(2**(e-127)); 0.5.22 measured, tests/rules/sglang/diff), so QC305 degrades sglang; its
    releases that stop at MXFP8 weight load fail by QC615. sglang's inspector itself does not
    check explicit mxfp8 markers (sglang-messages.md §8), so its recorded stages would pass."""
    path = save(oracle, tmp_path, 256, 512, "TensorCoreMXFP8Layout", {"format": "mxfp8"})
    assert dtypes(path)["weight_scale"] == ("F8_E8M0", (256, 16))
    status, effects = verdict(path)
    assert status == {"sglang": "fails", "comfyui": "fails"}
    # QC605: ComfyUI's default (DynamicVRAM) loader stops at any F8_E8M0 tensor.
    assert effects == {
        "QC305": {"sglang": "degraded", "comfyui": "fails"},
        "QC605": {"sglang": "none", "comfyui": "fails"},
        "QC615": {"sglang": "fails", "comfyui": "none"},
    }
    assert simulate_load([path]).ok  # explicit marker: no layout checks in sglang 0.5.23


def test_mxfp8_u8_scale_both_ok(oracle: Any, tmp_path: Path) -> None:
    path = save(
        oracle, tmp_path, 256, 512, "TensorCoreMXFP8Layout", {"format": "mxfp8"}, e8m0_as_u8=True
    )
    assert dtypes(path)["weight_scale"] == ("U8", (256, 16))
    # sglang 0.5.23 stops at weight load (QC615: weight_loader_v2 without tp_rank); 0.5.22's
    # v1 weight_loader loads it
    assert verdict(path) == (
        {"sglang": "fails", "comfyui": "ok"},
        {"QC615": {"sglang": "fails", "comfyui": "none"}},
    )
    assert marker_path(check_paths([path], target="sglang@0.5.22"), "sglang@0.5.22") == "ok"


def test_mxfp8_padded_u8_scale(oracle: Any, tmp_path: Path) -> None:
    path = save(
        oracle, tmp_path, 100, 200, "TensorCoreMXFP8Layout", {"format": "mxfp8"}, e8m0_as_u8=True
    )
    assert dtypes(path)["weight"] == ("F8_E4M3", (128, 224))
    assert dtypes(path)["weight_scale"] == ("U8", (128, 8))
    status, effects = verdict(path)
    assert status == {"sglang": "fails", "comfyui": "ok"}
    assert effects == {
        "QC308": {"sglang": "fails", "comfyui": "none"},
        "QC615": {"sglang": "fails", "comfyui": "none"},
    }
