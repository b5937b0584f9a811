"""A fix never introduces a finding for a target it was asked about (issue 22 item 12): for
every rule case (tests/rules/cases*.py), every target and both `--unsafe-fixes` settings, the
planned output (re-checked from its bytes) reports no finding on that target that the input
did not report (judged as `check` judges it: not one of a loader that does not read the file).
A fix that would trade one problem for another is refused and says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import deciding, run_rules, select_diagnostics
from quantcheck.fix.planner import diagnostic_key, plan_fixes, unrepairable
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.levels import Effect
from quantcheck.runtimes import runtimes, targets_of
from rules.test_rule_table import CASES

TARGETS = ("default", "all", *(rt.name for rt in runtimes()))


def _introduced(paths: list[str], target: str, unsafe: bool) -> list[str]:
    with load_checkpoint(paths) as ck:
        if unrepairable(ck):
            return []
        before = {diagnostic_key(d) for d in select_diagnostics(run_rules(ck), target=target)}
        plan = plan_fixes(ck, target=target, unsafe=unsafe)
        scope = targets_of(target)
        assert plan.final is not None
        # as check judges them: a finding of a loader that does not read the file (sglang's
        # --comfyui-mode for a file it has no spec for) decides no verdict
        return [
            f"{d.code} {d.layer or d.tensor or d.file}: {d.message}"
            for d in deciding(plan.final, plan.remaining, scope)
            if diagnostic_key(d) not in before
            and any(d.effect_at(k) is not Effect.NONE for k in scope)
        ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_no_fix_introduces_a_finding(case, tmp_path: Path) -> None:
    paths = [str(p) for p in case.build(tmp_path)]
    found = {
        (target, unsafe): new
        for target in TARGETS
        for unsafe in (False, True)
        if (new := _introduced(paths, target, unsafe))
    }
    assert not found, found
