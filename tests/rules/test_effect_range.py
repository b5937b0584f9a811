"""`explain CODE` tells the effects `check` applies (issue 22 item 11): for every code, the
effects the findings of every rule case (and twin) have on each runtime are exactly the
rule's effect range, which is what `explain` and docs/rules.md print."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.rules.effect_variants import VARIANTS
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules

from .test_rule_table import CASES


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, set[Effect]]]:
    """code -> runtime -> the effects its findings have over every case and twin."""
    seen: dict[str, dict[str, set[Effect]]] = defaultdict(lambda: defaultdict(set))
    for k, case in enumerate(CASES):
        for build in (case.build, case.twin):
            if build is None:
                continue
            folder = tmp_path_factory.mktemp(f"c{k}")
            paths = [str(p) for p in build(folder)]
            for d in check_paths(paths, **case.check_kwargs).diagnostics:
                for t, e in d.effective_effects.items():
                    seen[d.code][t].add(e)
    return seen


def test_every_effect_check_gives_is_in_the_rule_range(
    observed: dict[str, dict[str, set[Effect]]],
) -> None:
    rules = all_rules()
    wrong = {
        code: {t: sorted(e.value for e in got) for t, got in per.items()}
        for code, per in observed.items()
        if any(got != set(rules[code].effect_range()[t]) for t, got in per.items())
    }
    assert not wrong, f"explain would not tell these effects: {wrong}"


def test_every_declared_variant_is_seen_in_a_case(
    observed: dict[str, dict[str, set[Effect]]],
) -> None:
    assert set(VARIANTS) <= set(all_rules())
    for code, per in VARIANTS.items():
        for t, effects in per.items():
            assert {Effect(e) for e in effects} <= observed[code][t], (code, t)


@pytest.mark.parametrize("code", sorted(VARIANTS))
def test_explain_prints_the_range(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    rule = all_rules()[code]
    assert main(["explain", code]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Effect"))
    for t, range_ in rule.effect_range().items():
        assert f"{t}: {' or '.join(e.value for e in range_)}" in line
    assert main(["explain", code, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["effect_range"] == {t: [e.value for e in r] for t, r in rule.effect_range().items()}


def test_qc305_tells_comfyui_fails_for_a_w4a8_channel_scale(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "QC305"]) == 0
    assert "comfyui: none or fails (by finding)" in capsys.readouterr().out
