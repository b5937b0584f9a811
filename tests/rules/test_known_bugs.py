"""Regressions of rule bugs found in review (each test names the behaviour it pins)."""

from __future__ import annotations

from pathlib import Path

from quantcheck.checking import check_paths
from quantcheck.runtimes import default_targets

from ._build import W4A8, file, w4a4, w4a8
from .sglang.loader_helpers import core

DEFAULT = default_targets()  # other runtimes' effects: their own tests


def test_w4a8_convrot_groupsize_32_fails_sglang_too(tmp_path: Path) -> None:
    paths = file(lambda: w4a8(k=64, mark={**W4A8, "convrot_groupsize": 32}))(tmp_path)
    report = check_paths([str(p) for p in paths])
    hit = next(d for d in report.diagnostics if d.code == "QC219")
    assert {t: e.value for t, e in hit.effective_effects.items() if t in DEFAULT} == {
        "sglang": "fails",
        "comfyui": "fails",
    }


def test_bad_linear_dtype_reported_once(tmp_path: Path) -> None:
    mark = {"format": "convrot_w4a4", "convrot_groupsize": 16, "linear_dtype": "fp4"}
    paths = file(lambda: w4a4(mark=mark))(tmp_path)
    report = check_paths([str(p) for p in paths])
    assert sorted(d.code for d in core(report.diagnostics)) == ["QC221"]
