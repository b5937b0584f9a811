"""Verdicts that follow ComfyUI's own loading code (issue 20, items 1-4): each case is also a
case of the ComfyUI differential suite (tests/rules/diff_comfyui/cases.py), where ComfyUI's
code at the pin decides it."""

from __future__ import annotations

from pathlib import Path

from quantcheck.check import check_paths

from ._build import P, file, marker, t

DEFAULT = "comfyui,comfyui-cpu,sglang"


def _status(paths: list[Path], target: str = DEFAULT) -> tuple[dict[str, str], set[str]]:
    report = check_paths([str(p) for p in paths], target=target)
    keys = target.split(",")
    return {k: report.target_status(k)["status"] for k in keys}, {
        d.code for d in report.diagnostics
    }


# --- item 1: every independent problem of a layer, the worst deciding -----------------------


def test_wrong_dtype_weight_without_its_required_companion_fails(tmp_path: Path) -> None:
    """mxfp8 marker, I8 weight, no weight_scale: ComfyUI raises "Missing MXFP8 block scales"
    (comfy/ops.py _load_quantized_module) before the weight's dtype matters."""
    paths = file(lambda: [t(f"{P}.weight", "I8", (128, 128)), marker(P, {"format": "mxfp8"})])(
        tmp_path
    )
    status, codes = _status(paths)
    assert {"QC301", "QC303"} <= codes
    assert status["comfyui"] == "fails" and status["comfyui-cpu"] == "fails"
    assert status["sglang"] == "ok"  # its inspector passes explicit mxfp8 markers (recorded)


def test_unquantized_weight_without_its_scale_fails(tmp_path: Path) -> None:
    """A BF16 weight under an nvfp4 marker with no scales: ComfyUI raises "Missing NVFP4
    scales" before it casts the weight."""
    paths = file(lambda: [t(f"{P}.weight", "BF16", (64, 64)), marker(P, {"format": "nvfp4"})])(
        tmp_path
    )
    status, codes = _status(paths)
    assert {"QC301", "QC304"} <= codes
    assert status["comfyui"] == "fails"


def test_wrong_dtype_weight_with_a_wrong_dtype_scale_reports_both(tmp_path: Path) -> None:
    paths = file(
        lambda: [
            t(f"{P}.weight", "U8", (64, 64)),
            t(f"{P}.weight_s_rel", "F8_E4M3", (64, 8)),
            t(f"{P}.weight_s_channel", "BF16", (64,)),
            marker(P, {"format": "asym_w4a8_int8", "group_size": 16, "convrot_groupsize": 16}),
        ]
    )(tmp_path)
    status, codes = _status(paths)
    assert {"QC303", "QC305"} <= codes
    assert status["comfyui"] == "fails"  # the BF16 channel scale: NoCapableBackendError


# --- item 3: a 1-D int8 row scale: inference right, LoRA / fallback not ----------------------


def test_int8_row_scale_1d_is_ok_with_a_lora_warning(tmp_path: Path) -> None:
    from ._build import int8

    paths = file(lambda: int8(scale=("F32", (64,))))(tmp_path)
    report = check_paths([str(p) for p in paths], target=DEFAULT)
    assert report.target_status("comfyui")["status"] == "ok"
    assert report.target_status("comfyui-cpu")["status"] == "ok"
    (hit,) = [d for d in report.diagnostics if d.code == "QC319"]
    assert hit.effective_severity.value == "warning"
    assert "LoRA" in hit.message and "full-precision fallback" in hit.message
