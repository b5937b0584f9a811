"""ComfyUI's steps are named by the releases users know (issue 20 item 11): v0.8, v0.18, v0.27,
v0.28, v0.31, then 0271a469 (no release known to contain it) and 2026-09-29 (PR #16483's merge
date); the spellings used before (`v0.16`, `cd9452e`, `pr16483`) stay accepted as aliases, and a
status that rests on a step read only through a port says it is unverified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.rules.registry import find_rule
from quantcheck.runtimes import get_runtime, parse_target, targets_of

from .._build import file, fp8, w6a8

NAMES = ("v0.8", "v0.18", "v0.27", "v0.28", "v0.31", "0271a469", "2026-09-29")
UNVERIFIED = "unverified: w6a8_int8 support read from a port, not from ComfyUI"


@pytest.mark.parametrize("runtime", ["comfyui", "comfyui-cpu"])
def test_steps_are_named_by_release(runtime: str) -> None:
    assert get_runtime(runtime).release_names() == NAMES


@pytest.mark.parametrize(
    ("alias", "name"),
    [("v0.16", "v0.8"), ("cd9452e", "v0.31"), ("pr16483", "2026-09-29"), ("0271a469", "0271a469")],
)
@pytest.mark.parametrize("runtime", ["comfyui", "comfyui-cpu"])
def test_old_spellings_are_aliases(runtime: str, alias: str, name: str) -> None:
    value = f"{runtime}@{alias}"
    assert parse_target(value) == value
    assert targets_of(value) == (f"{runtime}@{name}",)
    rt = get_runtime(runtime)
    assert rt.release(alias) is rt.release(name)
    assert rt.effect_table(alias) == rt.effect_table(name)


def test_an_alias_target_reports_the_release_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in file(w6a8)(tmp_path)]
    assert main(["check", "--no-color", "--target", "comfyui@cd9452e", *paths]) == 1
    out = capsys.readouterr().out
    assert "comfyui@v0.31: fails" in out
    assert "releases: comfyui needs >= 2026-09-29 (v0.8 fails · v0.18 fails" in out


def test_unknown_release_lists_names_and_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match=r"v0\.31 \(or cd9452e\)"):
        parse_target("comfyui@v0.30")


def test_old_rule_names_still_select_and_explain(tmp_path: Path) -> None:
    rule = find_rule("format-needs-comfyui-cd9452e")
    assert rule is not None and rule.code == "QC607"
    assert find_rule("format-needs-comfyui-pr16483").code == "QC609"  # type: ignore[union-attr]
    paths = [str(p) for p in file(w6a8)(tmp_path)]
    report = check_paths(paths, target="comfyui@all", select=["format-needs-comfyui-pr16483"])
    assert {d.code for d in report.diagnostics} == {"QC609"}


def test_a_status_resting_on_a_port_reading_says_unverified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in file(w6a8)(tmp_path)]
    main(["check", "--no-color", "--target", "comfyui", *paths])
    assert f"comfyui: ok ({UNVERIFIED})" in capsys.readouterr().out
    main(["check", "--target", "comfyui,comfyui@0271a469", "--output-format", "json", *paths])
    targets = json.loads(capsys.readouterr().out)["checkpoints"][0]["targets"]
    assert targets["comfyui"]["verified"] is False
    assert targets["comfyui"]["unverified"] == UNVERIFIED.removeprefix("unverified: ")
    # the release before the guessed step fails on ComfyUI's own code: nothing to qualify
    assert "verified" not in targets["comfyui@0271a469"]


def test_html_card_says_unverified(tmp_path: Path) -> None:
    from quantcheck.render.html import build_report

    paths = [str(p) for p in file(w6a8)(tmp_path)]
    html = build_report(paths, target="comfyui", generated="x")
    assert UNVERIFIED in html


def test_a_file_without_guessed_formats_is_not_qualified(tmp_path: Path) -> None:
    paths = [str(p) for p in file(fp8)(tmp_path)]
    status = check_paths(paths, target="comfyui").target_status("comfyui")
    assert status == {"status": "ok", "errors": 0, "degraded": 0}
