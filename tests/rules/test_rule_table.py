"""Every registered code has documentation and a failing case; every case behaves as tabled."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.diagnostics import TARGETS, Effect
from quantcheck.rules.registry import all_rules
from quantcheck.rules.sglang.loaders import LOADER_CODES
from quantcheck.runtimes import get_runtime

from ._case import RuleCase

HERE = Path(__file__).parent
#: Every rule table: `cases*.py` here (the generic families) and `<runtime>/cases.py`.
TABLE_MODULES = sorted(
    ".".join(p.relative_to(HERE).with_suffix("").parts)
    for p in [*HERE.glob("cases*.py"), *HERE.glob("*/cases.py")]
    if not p.parent.name.startswith("diff_")
)


def _all_cases() -> list[RuleCase]:
    out: list[RuleCase] = []
    for stem in TABLE_MODULES:
        out += importlib.import_module(f"{__package__}.{stem}").CASES
    return out


CASES = _all_cases()

DOC_FIELDS = ("title", "checks", "why", "example", "remedy", "evidence")


def _codes(report) -> set[str]:
    return {d.code for d in report.diagnostics}


def _named(d, named: list[str]) -> dict[str, str]:
    """A finding's effects on the targets a case names."""
    return {t: e.value for t, e in d.effective_effects.items() if t in named}


def test_tables_are_found() -> None:
    assert "cases" in TABLE_MODULES and "cases_numeric" in TABLE_MODULES
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"


@pytest.mark.parametrize("code", list(all_rules()))
def test_code_is_documented(code: str) -> None:
    rule = all_rules()[code]
    empty = [f for f in DOC_FIELDS if not str(getattr(rule, f)).strip()]
    assert not empty, f"{code} has empty doc fields: {empty}"
    # every runtime not based on another is named; a fork may be left to its base
    own = {t for t in TARGETS if get_runtime(t).based_on is None}
    assert own <= set(rule.effects) <= set(TARGETS), f"{code} effects must name every target"
    assert rule.name == rule.name.lower() and " " not in rule.name
    doc = rule.doc()
    for f in ("checks", "why", "remedy", "evidence"):
        assert getattr(rule, f) in doc


@pytest.mark.parametrize("code", list(all_rules()))
def test_code_has_failing_case(code: str) -> None:
    """QC4xx included as soon as such codes are registered (their cases: cases_numeric.py)."""
    if all_rules()[code].retired:
        pytest.skip(f"{code} is retired")
    covered = {c.code for c in CASES}
    assert code in covered, (
        f"{code} ({all_rules()[code].name}) has no failing case in "
        f"tests/rules/{'cases_numeric' if code.startswith('QC4') else 'cases'}"
        ".py"
    )


def test_cases_name_registered_codes() -> None:
    unknown = sorted({c.code for c in CASES} - set(all_rules()))
    assert not unknown, f"cases for unregistered codes: {unknown}"


def test_every_case_has_twin_or_reason() -> None:
    lacking = [c.id for c in CASES if c.twin is None and not c.no_twin]
    assert not lacking, f"cases without a passing twin or a reason: {lacking}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_failing_case(case: RuleCase, tmp_path: Path) -> None:
    paths = [str(p) for p in case.build(tmp_path)]
    # every runtime: a generic code may now matter only to a runtime judged by name
    report = check_paths(paths, **{"target": "all", **case.check_kwargs})
    hits = [d for d in report.diagnostics if d.code == case.code]
    assert hits, f"{case.code} not reported; got {sorted(_codes(report))}"
    # a case states the effect on the runtimes it names (each runtime's own tables add theirs)
    named = case.expect_targets
    effects = [{t: e.value for t, e in d.effective_effects.items() if t in named} for d in hits]
    assert case.expect_targets in effects, f"{case.code} effects {effects}"
    if case.message is not None:
        assert any(case.message in d.message for d in hits), [d.message for d in hits]
    for t, e in case.expect_targets.items():
        entry = report.target_status(t)
        # the verdict of a loader that reads it: the deciding one's, or (a finding the
        # deciding loader does not read, rules/sglang/loaders.py) those it names in `read_by`
        read_by = {n for d in hits for n in d.data.get("read_by", ())}
        loaders = entry.get("loaders", {})
        status = [entry["status"], *(loaders[n]["status"] for n in read_by if n in loaders)]
        if e == "fails":
            assert "fails" in status, f"{t} status {status}"
        elif e == "degraded":
            assert {"degraded", "fails"} & set(status), f"{t} status {status}"
    # --target filtering: a diagnostic appears for a target it affects (or one it affects none).
    kw = {k: v for k, v in case.check_kwargs.items() if k != "target"}
    # a finding only older releases have (sglang@0.5.19) is not "neutral": it is left out of
    # a report for the newest releases
    release_only = any(d.release_effects() for d in hits)
    for t in named:
        only = check_paths(paths, target=t, **kw)
        shown = case.code in _codes(only)
        affects = case.expect_targets[t] != "none"
        neutral = not release_only and any(
            all(e.value == "none" for e in d.effective_effects.values()) for d in hits
        )
        if affects or neutral:
            assert shown, f"{case.code} missing with --target {t}"
        assert set(only.to_json()["targets"]) == {t}
    # JSON form of the finding: targets list and fix safety.
    doc = next(
        d.to_json()
        for d in hits
        if {t: e.value for t, e in d.effective_effects.items() if t in named} == named
    )
    assert [t for t in doc["targets"] if t in named] == [
        t for t in TARGETS if t in named and named[t] != "none"
    ]
    assert doc["fix"] is None or doc["fix"]["safety"] in ("safe", "unsafe", "display-only")


@pytest.mark.parametrize("case", [c for c in CASES if c.twin is not None], ids=lambda c: c.id)
def test_passing_twin(case: RuleCase, tmp_path: Path) -> None:
    assert case.twin is not None
    paths = [str(p) for p in case.twin(tmp_path)]
    report = check_paths(paths, **case.check_kwargs)
    assert case.code not in _codes(report), [
        d.message for d in report.diagnostics if d.code == case.code
    ]
    # clean for the runtimes the case names (another runtime's own findings on the twin, e.g.
    # InvokeAI's on a ConvRot file, are that runtime's cases)
    # likewise the findings of sglang's other loaders (they name the loader: `data.loaders`;
    # no quantized file loads through every one of them), unless the case is about a loader
    own_loader = case.code in LOADER_CODES
    relevant = {
        d.code
        for d in report.diagnostics
        if (any(d.effect_at(t) is not Effect.NONE for t in case.expect_targets) or not d.targets)
        and (own_loader or d.data.get("loaders") is None)
    }
    extra = relevant - set(case.twin_allows)
    assert not extra, f"twin is not clean: {sorted(extra)}"
