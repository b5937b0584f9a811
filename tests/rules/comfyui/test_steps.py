"""ComfyUI's format steps as release data (issue 13; QC606-QC610,
`runtimes/comfyui_releases.py` `STEPS`): each shown failing on the release before its step and
loading from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.formats.docs import format_section
from quantcheck.formats.table import FORMATS
from quantcheck.rules import codes as R
from quantcheck.runtimes import get_runtime
from quantcheck.runtimes.comfyui_releases import LAYER_CODE, STEPS

from .._build import Build, awq, file, fp8, int8, mxfp8, w4a4, w4a8, w6a8


def _paths(build: Build, where: Path) -> list[str]:
    where.mkdir(parents=True, exist_ok=True)
    return [str(p) for p in build(where)]


#: step -> a checkpoint needing exactly that step (its formats arrive there)
NEEDS_STEP: dict[str, Build] = {
    "v0.18": file(mxfp8),
    "v0.27": file(int8),
    "v0.28": file(w4a4),
    "v0.31": file(w4a8),
    "0271a469": file(awq),
    "2026-09-29": file(w6a8),
}


def test_every_step_after_the_oldest_has_a_case() -> None:
    assert set(NEEDS_STEP) == {name for name, code, _, _ in STEPS if code}


@pytest.mark.parametrize("step", NEEDS_STEP)
def test_comfyui_step_fails_before_and_loads_from_it(
    step: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = get_runtime("comfyui").release_names()
    prev = names[names.index(step) - 1]
    paths = _paths(NEEDS_STEP[step], tmp_path)
    assert main(["check", "--no-color", "--target", f"comfyui@{prev}", *paths]) == 1
    out = capsys.readouterr().out
    assert f"comfyui@{prev}: fails" in out
    assert main(["check", "--no-color", "--target", f"comfyui@{step}", *paths]) == 0
    assert f"comfyui@{step}: ok" in capsys.readouterr().out
    main(["check", "--no-color", "--target", "comfyui@all", *paths])
    out = capsys.readouterr().out
    assert f"releases: comfyui needs >= {step} (" in out
    for name in names:
        want = "fails" if names.index(name) < names.index(step) else "ok"
        assert f"{name} {want}" in out.split("releases: comfyui", 1)[1].splitlines()[0]


def test_qc610_effect_is_release_data(tmp_path: Path) -> None:
    """QC610 follows the 2026-09-29 step: fails up to 0271a469, none on the newest, and its
    message names the release that lacks the format and the one that adds it."""
    rt = get_runtime("comfyui")
    assert {"2026-09-29": R.QC610.code} == LAYER_CODE
    assert rt.affected(R.QC610.code) == ["v0.8", "v0.18", "v0.27", "v0.28", "v0.31", "0271a469"]
    paths = _paths(file(w6a8), tmp_path)
    assert R.QC610.code not in {d.code for d in check_paths(paths, target="comfyui").diagnostics}
    old = check_paths(paths, target="comfyui@0271a469")
    hit = [d for d in old.diagnostics if d.code == R.QC610.code]
    assert hit and "up to 0271a469" in hit[0].message
    assert "2026-09-29 [GUESS] adds it" in hit[0].message
    assert old.target_status("comfyui@0271a469")["status"] == "fails"
    assert check_paths(paths, target="comfyui").target_status("comfyui")["status"] == "ok"


def test_format_docs_say_which_comfyui_release_adds_a_format() -> None:
    assert "ComfyUI: yes (from 2026-09-29 [GUESS])" in "\n".join(
        format_section(FORMATS["w6a8_int8"])
    )
    assert "ComfyUI: yes (from v0.27)" in "\n".join(format_section(FORMATS["int8_tensorwise"]))
    assert "ComfyUI: yes;" in "\n".join(format_section(FORMATS["nvfp4"]))


def test_fp8_needs_no_comfyui_step(tmp_path: Path) -> None:
    report = check_paths(_paths(file(fp8), tmp_path), target="comfyui@all")
    assert report.releases["comfyui"]["needs"] == "v0.8"
