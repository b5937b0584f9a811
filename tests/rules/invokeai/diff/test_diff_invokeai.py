"""Differential test: InvokeAI 6.14.2's own loader functions (its PyPI wheel, pinned by
SHA-256) against quantcheck's `invokeai` verdicts (`make diff-consumers`).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1 (the wheel is downloaded once; needs torch (CPU)
and safetensors).

A verdict agrees when: its code raises exactly where quantcheck says "fails"; a layer that
loads with a weight other than its own is "degraded" by an error finding (QC721/QC722/QC301);
its correct dequantization is QC720 and its leftover keys QC724.
"""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from ...diff_cases import assert_agree, judged
from .loader import load
from .real import invokeai_outcome

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

#: InvokeAI findings that say a layer loads with a weight other than its own.
INVOKEAI_WRONG = {"QC721", "QC722", "QC301", "QC303", "QC304"}


@pytest.fixture(scope="module")
def invokeai(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return load(tmp_path_factory.mktemp("invokeai"))


def invokeai_agrees(outcome: str, status: str, codes: set[str]) -> bool:
    if outcome == "raises":
        return status == "fails"
    if status != "degraded":
        return False
    if outcome == "wrong":
        return bool(codes & INVOKEAI_WRONG)
    if codes & INVOKEAI_WRONG:
        return False
    return ("QC724" in codes) == (outcome == "leftovers") and (
        outcome == "leftovers" or "QC720" in codes
    )


def test_invokeai_agrees_with_quantcheck(
    invokeai: types.ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = judged(
        "invokeai",
        lambda path, layers: invokeai_outcome(invokeai, path, layers),
        invokeai_agrees,
        tmp_path,
    )
    assert_agree(rows, capsys)
