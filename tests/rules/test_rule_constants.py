"""Rules are named constants, and what a rule's fix does is said once, in the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.diagnostics import Diagnostic, Safety
from quantcheck.fix.planner import BY_REWRITE, fix_of
from quantcheck.rules import codes
from quantcheck.rules.registry import all_rules

from ._case import RuleCase
from .test_rule_table import CASES

SRC = Path(__file__).resolve().parents[2] / "src" / "quantcheck"
#: Where code strings are definitions, not emissions: the catalogs and `codes`.
NOT_EMITTERS = {"comfyui_releases.py", "codes.py", "effect_variants.py"}  # data by code


def test_every_rule_is_a_constant() -> None:
    rules = all_rules()
    assert set(codes.__all__) == set(rules)
    for code, rule in rules.items():
        assert getattr(codes, code) is rule


def test_each_code_binds_from_its_own_catalog() -> None:
    """`codes._HOMES` (generated) names the catalog of every code: binding one imports only
    that catalog, and gives the registry's rule; an unknown code is a KeyError."""
    homed = {c: m for m, cs in codes._HOMES.items() for c in cs.split()}
    assert set(homed) == set(all_rules())
    for code, rule in all_rules().items():
        assert codes.rule_of(code) is rule
        assert rule in __import__(homed[code], fromlist=["RULES"]).RULES
    with pytest.raises(KeyError):
        codes.rule_of("QC999")


def test_diagnostic_takes_the_rule() -> None:
    d = Diagnostic(codes.QC301, "x")
    assert d.code == "QC301" and d.rule is codes.QC301


def test_checks_emit_no_code_strings() -> None:
    literal = re.compile(r"[\"']QC\d{3}[\"']")
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name not in NOT_EMITTERS
        and p.name != "catalog.py"
        and p.parent.name != "runtimes"  # release data: tests/rules/sglang/test_releases.py
        and literal.search(p.read_text())
    ]
    assert not offenders, f"emit rules from quantcheck.rules.codes, not strings: {offenders}"


def test_fix_facts_live_in_the_registry() -> None:
    """Rewrite-repaired rules declare a safe fix; rules with a fix action declare its safety."""
    for code, rule in all_rules().items():
        assert rule.repair in ("", "rewrite", "refuse"), code
        if rule.repair == "rewrite" or rule.action is not None:
            assert rule.fix is Safety.SAFE, code
        if rule.repair == "refuse":
            assert rule.fix is None, code


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_declared_fix_safety_matches_emitted(case: RuleCase, tmp_path: Path) -> None:
    """Each diagnostic carries its rule's declared fix safety, or no fix for this instance.

    A rule declared without a fix never emits one; a display-only fix is only emitted by a rule
    declared display-only (so `rules` and `explain` never promise a fix `fix` cannot apply).
    """
    rule = all_rules()[case.code]
    paths = [str(p) for p in case.build(tmp_path)]
    report = check_paths(paths, **{"target": "all", **case.check_kwargs})
    hits = [d for d in report.diagnostics if d.code == case.code]
    assert hits
    for d in hits:
        fix = fix_of(d)
        got = Safety.SAFE if d.code in BY_REWRITE else (fix.safety if fix else None)
        assert got in (rule.fix, None), (
            f"{case.code} declares fix {rule.fix}, emits {got}: {d.message}"
        )
        if rule.fix is None:
            assert got is None, f"{case.code} declares no fix but emits {got}"
