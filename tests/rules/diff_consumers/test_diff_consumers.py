"""Differential tests: InvokeAI 6.14.2's and DiffSynth-Studio 2.1.12's own loader functions
(PyPI wheels, pinned by SHA-256) against quantcheck's verdicts (`make diff-consumers`).

Skipped unless QUANTCHECK_DIFF_CONSUMERS=1 (they download two wheels, ~14 MB, once; they need
torch (CPU), safetensors and comfy-kitchen).

A verdict agrees when: their code raises exactly where quantcheck says "fails"; a layer that
loads with a weight other than its own is "degraded" by an error finding (InvokeAI QC721/
QC722/QC301, DiffSynth any); InvokeAI's correct dequantization is QC720 and its leftover keys
QC724; DiffSynth's exact load is "ok".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quantcheck.checking import check_paths

from .cases import AMBIGUOUS, CASES
from .loader import load_both
from .real import diffsynth_outcome, invokeai_outcome

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_CONSUMERS") != "1",
    reason="set QUANTCHECK_DIFF_CONSUMERS=1 (make diff-consumers)",
)

#: InvokeAI findings that say a layer loads with a weight other than its own.
INVOKEAI_WRONG = {"QC721", "QC722", "QC301", "QC303", "QC304"}


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return dict(load_both(tmp_path_factory.mktemp("consumers")))


def _ours(path: str, target: str) -> tuple[str, set[str]]:
    report = check_paths([path], target=target)
    codes = {
        d.code
        for d in report.diagnostics
        if target in d.effective_effects and d.effective_effects[target].value != "none"
    }
    return report.target_status(target)["status"], codes


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


def diffsynth_agrees(outcome: str, status: str) -> bool:
    return {"raises": "fails", "wrong": "degraded", "exact": "ok"}[outcome] == status


def _run(modules: dict[str, object], tmp_path: Path) -> list[tuple[str, str, str, str, str]]:
    rows = []
    for name, build in CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        path, layers = build(folder)
        for target, run in (("invokeai", invokeai_outcome), ("diffsynth", diffsynth_outcome)):
            outcome, why = run(modules[target], path, layers)  # type: ignore[operator]
            status, codes = _ours(path, target)
            ok = (
                invokeai_agrees(outcome, status, codes)
                if target == "invokeai"
                else diffsynth_agrees(outcome, status)
            )
            rows.append(
                (
                    "agree" if ok else "ambiguous" if (target, name) in AMBIGUOUS else "DISAGREE",
                    target,
                    name,
                    f"{outcome} ({why})",
                    f"{status} {sorted(codes)}",
                )
            )
    return rows


def test_consumers_agree_with_quantcheck(
    modules: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    rows = _run(modules, tmp_path)
    with capsys.disabled():
        agree = sum(r[0] == "agree" for r in rows)
        ambiguous = sum(r[0] == "ambiguous" for r in rows)
        print(f"\n{agree}/{len(rows)} verdicts agree, {ambiguous} ambiguous by design (AMBIGUOUS)")
        for r in rows:
            print(" | ".join(r))
    bad = [" | ".join(r) for r in rows if r[0] == "DISAGREE"]
    assert not bad, "\n".join(bad)
