"""Differential test: DiffSynth-Studio 2.1.12's own loader functions (its PyPI wheel, pinned
by SHA-256) against quantcheck's `diffsynth` verdicts (`make diff-consumers`).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1 (the wheel is downloaded once; needs torch (CPU),
safetensors and comfy-kitchen).

A verdict agrees when: its code raises exactly where quantcheck says "fails"; a layer that
loads with a weight other than its own is "degraded" by any finding; its exact load is "ok".
"""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from ...diff_cases import assert_agree, judged
from .loader import load
from .real import diffsynth_outcome

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

#: Cases where quantcheck's verdict cannot follow the real outcome, and why: the file does not
#: say which group its weights were rotated with (QC320 warns whenever the group is left out).
AMBIGUOUS = {
    "int8-convrot-default-group-fits": "rotated with 256 and no group in the marker: "
    "DiffSynth's default 256 happens to be right; QC320 cannot know (degraded)",
}


@pytest.fixture(scope="module")
def diffsynth(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return load(tmp_path_factory.mktemp("diffsynth"))


def diffsynth_agrees(outcome: str, status: str, codes: set[str]) -> bool:
    return {"raises": "fails", "wrong": "degraded", "exact": "ok"}[outcome] == status


def test_diffsynth_agrees_with_quantcheck(
    diffsynth: types.ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = judged(
        "diffsynth",
        lambda path, layers: diffsynth_outcome(diffsynth, path, layers),
        diffsynth_agrees,
        tmp_path,
        AMBIGUOUS,
    )
    assert_agree(rows, capsys)
