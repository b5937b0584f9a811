"""Forge Neo as a target: its own rules, its effects on every existing code, the example
checkpoints' verdicts, `--target all` and `explain`.

Each own rule's failing file and passing twin are rows of `forge_neo/cases.py` (run by
test_rule_table.py); here: what the table cannot say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from example_files import EXAMPLES
from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.messages import match_message
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime
from quantcheck.runtimes.forge_neo import EFFECTS, FOLLOWS_COMFYUI

from .._build import INT8_CONVROT, P, file, fp8, header_meta, int8, t, w4a8

NAME = "forge-neo"
OWN = ("QC701", "QC702", "QC703")

#: What Forge Neo does with each bundled example (established from its ported loader).
EXAMPLE_VERDICTS = {
    "awq_w4a16.safetensors": "fails",
    "broken_seeds.safetensors": "fails",
    "fp8_e4m3fn.safetensors": "ok",
    "int8_convrot.safetensors": "ok",
    "mxfp8.safetensors": "ok",
    "nvfp4.safetensors": "ok",
    "w4a4_convrot.safetensors": "fails",
    "w4a8_codebook.safetensors": "fails",
    "w6a8_int8.safetensors": "fails",
}


def test_every_code_is_decided_for_forge_neo() -> None:
    """A new code must be put in EFFECTS, FOLLOWS_COMFYUI or Forge Neo's own rules."""
    decided = set(EFFECTS) | set(FOLLOWS_COMFYUI) | set(OWN)
    assert not set(EFFECTS) & set(FOLLOWS_COMFYUI)
    others = {c for c in all_rules() if c.startswith("QC7") and c not in OWN}
    assert set(all_rules()) - others == decided


def test_forge_neo_is_a_comfyui_fork_outside_the_default_target() -> None:
    rt = get_runtime(NAME)
    assert rt.based_on == "comfyui" and not rt.default_target
    assert rt.release_names() == ("bfd09a1", "939c56d", "1835c9c")
    for code in OWN:  # each rule cites the upstream file it follows
        assert "Haoming02/sd-webui-forge-classic" in all_rules()[code].evidence


@pytest.mark.parametrize("name", sorted(EXAMPLE_VERDICTS))
def test_example_verdicts(name: str) -> None:
    report = check_paths([str(EXAMPLES / name)], target=NAME)
    assert report.target_status(NAME)["status"] == EXAMPLE_VERDICTS[name]


def test_generic_findings_follow_comfyui(tmp_path: Path) -> None:
    # a BF16 weight under an INT8 marker: ComfyUI degrades (QC304), so does its port
    paths = [str(p) for p in file(lambda: int8(weight=("BF16", (64, 64))))(tmp_path)]
    d = next(d for d in check_paths(paths, target="all").diagnostics if d.code == "QC304")
    assert d.effective_effects[NAME] is d.effective_effects["comfyui"]


def test_comfyui_only_loader_failure_does_not_apply(tmp_path: Path) -> None:
    # F8_E8M0 scales stop ComfyUI's DynamicVRAM loader; Forge Neo reads with safe_open
    def make() -> list:
        return [*fp8()[:-1], t(f"{P}.extra", "F8_E8M0", (4,))]

    paths = [str(p) for p in file(make)(tmp_path)]
    d = next(d for d in check_paths(paths, target="all").diagnostics if d.code == "QC605")
    assert d.effective_effects["comfyui"].value == "fails"
    assert d.effective_effects[NAME].value == "none"


def test_format_release_steps(tmp_path: Path) -> None:
    paths = [str(p) for p in file(int8)(tmp_path)]
    report = check_paths(paths, target=f"{NAME}@all")
    assert report.target_status(f"{NAME}@bfd09a1")["status"] == "fails"
    assert report.target_status(f"{NAME}@939c56d")["status"] == "ok"
    assert report.target_status(NAME)["status"] == "ok"
    # newest release: the step finding is not shown for a bare target
    assert "QC702" not in {d.code for d in check_paths(paths, target=NAME).diagnostics}


def test_lost_convrot_is_an_error_and_a_lost_default_a_warning(tmp_path: Path) -> None:
    lost_rotation = file(int8, header_meta({P: {"format": "int8_tensorwise"}}))
    d = next(
        d
        for d in check_paths([str(p) for p in lost_rotation(tmp_path)], target=NAME).diagnostics
        if d.code == "QC703"
    )
    assert d.effective_severity.value == "error"
    other = tmp_path / "b"
    other.mkdir()
    mark = {**INT8_CONVROT, "full_precision_matrix_mult": True}
    lost_flag = file(lambda: int8(mark=mark), header_meta({P: INT8_CONVROT}))
    d = next(
        d
        for d in check_paths([str(p) for p in lost_flag(other)], target=NAME).diagnostics
        if d.code == "QC703"
    )
    assert d.effective_severity.value == "warning" and "full_precision_matrix_mult" in d.message


def test_forge_neo_findings_stay_out_of_the_default_report(tmp_path: Path) -> None:
    paths = [str(p) for p in file(w4a8)(tmp_path)]
    assert not {"QC701"} & {d.code for d in check_paths(paths).diagnostics}
    assert "QC701" in {d.code for d in check_paths(paths, target=NAME).diagnostics}


def test_target_all_names_forge_neo_in_the_summary(capsys: pytest.CaptureFixture) -> None:
    rc = main(["check", "--target", "all", str(EXAMPLES / "w4a4_convrot.safetensors")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "forge-neo: fails" in out.split("targets:")[1]
    main(["check", "--format", "json", "--target", "all", str(EXAMPLES / "nvfp4.safetensors")])
    doc = json.loads(capsys.readouterr().out)
    assert doc["targets"][NAME]["status"] == "ok"


def test_explain_round_trip(capsys: pytest.CaptureFixture) -> None:
    text = "Traceback (most recent call last):\n  ...\nKeyError: 'convrot_w4a4'\n"
    m = match_message(text)  # the same text as ComfyUI's: its pattern names Forge Neo too
    assert m is not None and any("--target forge-neo" in c for c in m.pattern.causes)
    m = match_message("ValueError: Missing NVFP4 scales for layer blocks.0.attn.qkv")
    assert m is not None and m.code == "QC301" and m.values["prefix"] == "blocks.0.attn.qkv"
    assert main(["explain", "KeyError: 'asym_w4a8_int8'"]) == 0
    out = capsys.readouterr().out
    assert "QC701" in out and "--target forge-neo" in out
