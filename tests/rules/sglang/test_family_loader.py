"""The sglang status follows the loader of the detected model family (issue 20 item 13)."""

from __future__ import annotations

from pathlib import Path

import quantcheck

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_detected_family_picks_its_loader() -> None:
    report = quantcheck.check(str(EXAMPLES / "flux" / "flux_nvfp4.safetensors"), target="sglang")
    assert report.family["name"] == "flux"
    entry = report.target_status("sglang")
    # Flux goes through --transformer-weights-path, which infers NVFP4 from the tensors;
    # --comfyui-mode's refusals are still shown but do not decide
    assert entry["loader"] == "transformer-weights-path"
    assert entry["status"] == "ok"
    assert entry["loaders"]["comfyui-mode"]["status"] == "fails"


def test_an_unknown_family_is_read_as_transformer_weights_path_reads_it() -> None:
    """The one loader whose reading does not depend on the model decides while the family is
    not detected (rules/sglang/loaders.py); --comfyui-mode's specs need their family."""
    report = quantcheck.check(str(EXAMPLES / "nvfp4.safetensors"), target="sglang")
    assert report.family["name"] is None
    entry = report.target_status("sglang")
    assert entry["loader"] == "transformer-weights-path"
    assert entry["status"] == "ok" and entry["loader_family"] is None
    assert entry["loaders"]["comfyui-mode"]["status"] == "fails"  # every spec shown
    assert report.exit_code() == 0


def test_a_family_given_by_the_caller_wins() -> None:
    report = quantcheck.check(str(EXAMPLES / "nvfp4.safetensors"), target="sglang")
    assert report.target_status("sglang", family="flux")["status"] == "ok"
    assert report.target_status("sglang", family="minimax_h3")["loader"] == "minimax-h3"
