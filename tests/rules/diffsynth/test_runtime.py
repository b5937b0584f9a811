"""DiffSynth-Studio 2.1.12 as a target: its record, its effects table (a decision for every
code), the verdict on each bundled example, the summary line and explain. Each own rule's
failing case and twin: diffsynth/cases.py; DiffSynth's own code confirms the verdicts in
diffsynth/diff/ (make diff-consumers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.messages import match_message
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, targets_of
from quantcheck.runtimes.diffsynth import EFFECTS, LEFT_NONE, OWN_CODES

from .._build import INT8_CONVROT, P, file, header_meta, int8

NAME = "diffsynth"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
#: The status `--target diffsynth` gives each bundled example (only FP8 E4M3 and INT8 load).
VERDICTS = {
    "awq_w4a16": "fails",
    "broken_seeds": "fails",
    "fp8_e4m3fn": "ok",
    "int8_convrot": "ok",
    "mxfp8": "fails",
    "nvfp4": "fails",
    "w4a4_convrot": "fails",
    "w4a8_codebook": "fails",
    "w6a8_int8": "fails",
}


def test_record() -> None:
    rt = get_runtime(NAME)
    assert rt.title == "DiffSynth-Studio" and rt.release_names() == ("2.1.12",)
    assert not rt.default_target and NAME not in targets_of("default")
    assert NAME in targets_of("all")
    assert rt.checks and rt.messages and "5881b2a" in rt.doc


def test_every_code_has_a_decision() -> None:
    """A new generic code fails this until someone decides what it does to DiffSynth."""
    generic = {c for c in all_rules() if not c.startswith("QC7")}
    assert not set(EFFECTS) & set(LEFT_NONE)
    assert set(EFFECTS) | set(LEFT_NONE) == generic
    assert all(e is not Effect.NONE for e in EFFECTS.values())
    own = {c for c in all_rules() if c.startswith("QC73")}
    assert own == set(OWN_CODES)


@pytest.mark.parametrize("code", OWN_CODES)
def test_own_rules_name_only_diffsynth(code: str) -> None:
    rule = all_rules()[code]
    assert rule.effects[NAME] is Effect.FAILS
    assert all(e is Effect.NONE for t, e in rule.effects.items() if t != NAME)
    assert "DiffSynth-Studio 2.1.12" in rule.evidence and "[GUESS]" not in rule.evidence


@pytest.mark.parametrize("example", sorted(VERDICTS))
def test_example_verdicts(example: str) -> None:
    path = str(EXAMPLES / f"{example}.safetensors")
    report = check_paths([path], target=NAME)
    assert report.target_status(NAME)["status"] == VERDICTS[example]


def test_header_only_vs_tensor_markers(tmp_path: Path) -> None:
    """Only marker tensors count: the same layer declared in the header alone fails."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    both = [str(p) for p in file(int8, header_meta({P: INT8_CONVROT}))(tmp_path / "a")]
    header_only = file(lambda: int8()[:2], header_meta({P: INT8_CONVROT}))
    header = [str(p) for p in header_only(tmp_path / "b")]
    assert check_paths(both, target=NAME).target_status(NAME)["status"] == "ok"
    report = check_paths(header, target=NAME)
    assert report.target_status(NAME)["status"] == "fails"
    assert [d.code for d in report.diagnostics if NAME in d.targets] == ["QC733"]
    # ComfyUI and sglang read the header: the same file loads there
    assert check_paths(header).target_status("comfyui")["status"] == "ok"


def test_summary_line_shows_diffsynth(capsys: pytest.CaptureFixture) -> None:
    main(["check", "--target", "all", str(EXAMPLES / "nvfp4.safetensors")])
    out = capsys.readouterr().out
    assert "diffsynth: fails" in out and "comfyui: ok" in out
    main(["check", str(EXAMPLES / "nvfp4.safetensors")])
    assert "diffsynth" not in capsys.readouterr().out  # not a default target


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            "ValueError: `blocks.0.mlp` uses format `nvfp4`, not in ['float8_e4m3fn', "
            "'int8_tensorwise'].",
            "QC730",
        ),
        ("ValueError: `blocks.0.mlp.comfy_quant` has no `format` field.", "QC730"),
        ("ValueError: `blocks.0.mlp` has a comfy_quant marker but no `weight_scale`.", "QC731"),
        (
            "ValueError: The marker of `blocks.0.mlp` asks for convrot with groupsize 256, which "
            "does not divide in_features=64.",
            "QC732",
        ),
        ("ValueError: `blocks.0.mlp.comfy_quant` is not valid JSON: Unexpected UTF-8 BOM", "QC201"),
    ],
)
def test_explain_round_trip(text: str, code: str) -> None:
    m = match_message(text)
    assert m is not None and m.code == code, m
    assert m.pattern.runtime == "DiffSynth-Studio 2.1.12"
    assert "--target diffsynth" in m.render()
