"""Every rule has an explicit decision for every registered runtime (issue 20, item 6): an
effect with a one-line reason, never a silent none. A new rule or runtime fails here until
someone decides what the rule does to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import decision, runtime_names, runtimes

from ._build import bf16, write_safetensors


def test_every_rule_has_a_reasoned_effect_on_every_runtime() -> None:
    missing = [
        f"{code} on {rt.name}"
        for code, rule in all_rules().items()
        if not rule.retired
        for rt in runtimes()
        if not (hit := decision(rt, code, rule.effects, rule.prose)) or not hit[1].strip()
    ]
    assert not missing, "no decision (a silent none): " + ", ".join(missing)


def test_reasons_are_one_line_and_name_only_known_codes() -> None:
    codes = set(all_rules())
    for rt in runtimes():
        for code, why in rt.reasons.items():
            assert code in codes, (rt.name, code)
            assert "\n" not in why and why == why.strip(), (rt.name, code)


def test_explain_shows_each_runtime_reason() -> None:
    doc = all_rules()["QC506"].doc()
    assert "sdcpp: fails — " in doc and "no reasoned decision" not in doc


def _shard_set(tmp: Path, parts: tuple[int, ...], total: int) -> list[str]:
    out = []
    for i in parts:
        path = tmp / f"model-{i:05d}-of-{total:05d}.safetensors"
        write_safetensors(path, bf16(f"l{i}"))
        out.append(str(path))
    return out


@pytest.mark.parametrize("target", runtime_names())
def test_a_missing_shard_fails_every_runtime(tmp_path: Path, target: str) -> None:
    """NAME-00001-of-00003 and -00003-of-00003 only: a missing tensor is missing everywhere."""
    report = check_paths(_shard_set(tmp_path, (1, 3), 3), target=target)
    assert report.target_status(target)["status"] == "fails"
    hit = next(d for d in report.diagnostics if d.code == "QC506")
    assert hit.effect_at(target).value == "fails"


def test_a_missing_shard_exits_1_for_sdcpp(tmp_path: Path) -> None:
    from quantcheck.cli.main import main

    paths = _shard_set(tmp_path, (1, 3), 3)
    assert main(["check", "--target", "sdcpp", *paths]) == 1
