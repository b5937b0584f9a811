"""sglang's verdict per loader (issue 20 items 5 and 13): `targets["sglang@V"].loaders` in
JSON, one line per loader in text where they differ, and the stage each rule's evidence
names. The loaders' code is run against these verdicts by tests/rules/sglang/diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.rules.registry import get_rule

from .._build import (
    INT8_CONVROT,
    Build,
    P,
    file,
    fp8,
    header_meta,
    int8,
    mxfp8,
    nvfp4,
)

FC1 = "blocks.0.mlp.fc1"
REFUSAL = "Replacement checkpoint contains quantized tensors but no supported native"


def _loaders(build: Build, tmp_path: Path, release: str = "0.5.23") -> dict[str, Any]:
    key = f"sglang@{release}"
    paths = [str(p) for p in build(tmp_path)]
    loaders: dict[str, Any] = check_paths(paths, target=key).target_status(key)["loaders"]
    return loaders


def _status(loaders: dict[str, Any]) -> dict[str, str]:
    return {name: v["status"] for name, v in loaders.items()}


def test_marker_only_file_fails_the_transformer_weights_path(tmp_path: Path) -> None:
    """(a) _resolve_weight_override_quantization reads no markers: a comfy_quant INT8 file
    without a header declaration is refused there, read by the H3 and text-encoder loaders,
    and loaded unquantized (cast) by the ComfyUI specs without quant_markers."""
    loaders = _loaders(file(int8), tmp_path)
    assert _status(loaders) == {
        "transformer-weights-path": "fails",
        "minimax-h3": "ok",
        "comfyui-mode": "degraded",
        "text-encoder": "ok",
    }
    assert REFUSAL in loaders["transformer-weights-path"]["reason"]
    assert "never read" in loaders["transformer-weights-path"]["reason"]


def test_nvfp4_is_inferred_by_the_transformer_weights_path(tmp_path: Path) -> None:
    loaders = _loaders(file(nvfp4), tmp_path)
    assert loaders["transformer-weights-path"]["status"] == "ok"
    assert "ModelOptFp4Config" in loaders["transformer-weights-path"]["reason"]
    # Qwen-Image 2.1's quant_markers resolve without files: NVFP4 refused there (QC637); the
    # specs without quant_markers cannot fit the packed weights (QC636)
    assert loaders["comfyui-mode"]["status"] == "fails"
    assert "(QC636, QC637)" in loaders["comfyui-mode"]["reason"]
    (tmp_path / "again").mkdir()
    paths = [str(p) for p in file(nvfp4)(tmp_path / "again")]
    found = check_paths(paths, target="sglang").diagnostics
    assert any(
        d.code == "QC637"
        and "requires checkpoint files" in d.message
        and d.data["loaders"] == ["comfyui-mode"]
        for d in found
    )


def test_header_not_json_fails_the_override_itself(tmp_path: Path) -> None:
    """The header path drops invalid JSON silently; the override resolution raises its own
    ValueError("Invalid _quantization_metadata in …") (the text encoder's marker inspector
    fails on it too: QC208)."""
    loaders = _loaders(file(fp8, {"_quantization_metadata": "{not json"}), tmp_path)
    assert loaders["transformer-weights-path"]["status"] == "fails"
    assert "Invalid _quantization_metadata" in loaders["transformer-weights-path"]["reason"]
    assert "inspect_comfy_quant_markers" in loaders["text-encoder"]["reason"]


def test_header_routed_file_keeps_the_marker_verdict_for_h3(tmp_path: Path) -> None:
    """An FP8 header + FP8/INT8 file: the header path's whole-model Fp8Config decides the
    text-encoder and override loaders; MiniMax-H3 reads the markers, whose resolver refuses
    the FP8 + INT8 mix (QC602)."""
    build = file(
        lambda: [*fp8(), *int8(FC1, scale=("F32", ()))],
        header_meta({P: {"format": "float8_e4m3fn"}, FC1: INT8_CONVROT}),
    )
    loaders = _loaders(build, tmp_path)
    assert loaders["text-encoder"]["status"] == "degraded"  # QC617
    assert loaders["transformer-weights-path"]["status"] == "degraded"
    assert loaders["minimax-h3"]["status"] == "fails"


def test_releases_without_a_loader_leave_it_out(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    # 0.5.18: one transformer loader (MiniMax-H3's own inspection came with 0.5.19)
    assert set(_loaders(file(int8), tmp_path / "a", "0.5.18")) == {"transformer-weights-path"}
    (tmp_path / "b").mkdir()
    assert "comfyui-mode" not in _loaders(file(int8), tmp_path / "b", "0.5.20")
    (tmp_path / "c").mkdir()
    old = _loaders(file(int8), tmp_path / "c", "0.5.21")["comfyui-mode"]
    assert "no spec reads markers before 0.5.22" in old["reason"]


def test_path_reason_does_not_send_the_override_loader_to_the_markers(tmp_path: Path) -> None:
    paths = [str(p) for p in file(int8)(tmp_path)]
    reason = check_paths(paths, target="sglang").target_status("sglang")["path_reason"]
    assert "the text-encoder loader goes on to inspect_comfy_quant_markers" in reason
    assert "--transformer-weights-path loader never reads the markers" in reason


def test_json_and_text_show_each_loader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(p) for p in file(mxfp8)(tmp_path)]
    # --transformer-weights-path refuses the file (QC631): an error, exit 1
    assert main(["check", "--target", "sglang@0.5.22", "--output-format", "json", *paths]) == 1
    doc = json.loads(capsys.readouterr().out)
    target = doc["checkpoints"][0]["targets"]["sglang@0.5.22"]
    assert set(target["loaders"]) == {
        "transformer-weights-path",
        "minimax-h3",
        "comfyui-mode",
        "text-encoder",
    }
    assert all(set(v) == {"status", "reason"} for v in target["loaders"].values())
    main(["check", "--target", "sglang@0.5.22", *paths])
    out = capsys.readouterr().out
    assert "sglang@0.5.22 by loader:" in out
    assert "  transformer-weights-path: fails: " in out
    assert "  minimax-h3: ok: " in out


def test_loaders_that_agree_get_no_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in file(lambda: fp8()[:-1])(tmp_path)]
    main(["check", "--target", "sglang@0.5.18", *paths])
    assert "by loader:" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("code", "stage"),
    [
        ("QC615", "weight load"),
        ("QC617", "weight load"),
        ("QC630", "weight load"),
        ("QC307", "weight load"),
        ("QC220", "layer build"),
        ("QC219", "first forward"),
    ],
)
def test_evidence_names_the_stage_and_function(code: str, stage: str) -> None:
    """Item 5: a rule that models a stage after the marker inspector says which stage and
    which upstream function decides it."""
    rule = get_rule(code)
    text = rule.why + " " + rule.evidence
    assert stage in text.lower(), code
    assert any(
        fn in text
        for fn in (
            "load_model_from_full_model_state_dict",
            "fsdp_load",
            "get_quant_method",
            "weight_loader_v2",
            "w4a8_int8_linear",
        )
    ), code
