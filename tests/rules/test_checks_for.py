"""Running only the runtime checks a report can show (`rules.engine.checks_for`) leaves every
report identical to running every registered runtime's checks.

Compared over the examples and every rule-case file (`cases*.py`), for targets that leave out
each non-default runtime in turn; and the property the skip rests on is checked directly: the
findings of a non-default runtime's checks affect that runtime (or one `based_on` it) and no
other, so they are never general.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from quantcheck.checking import check_checkpoint
from quantcheck.diagnostics import Effect
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules import engine
from quantcheck.runtimes import load, runtimes

from .test_rule_table import CASES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Each leaves out some runtimes' checks; together every runtime is left out at least once,
#: also with per-release keys (the release matrix) and a based-on pair (forge-neo on comfyui).
TARGETS = (
    "default",
    "sglang@all",
    "comfyui@all",
    "forge-neo@all",
    "sdnext",
    "invokeai",
    "sdcpp@all",
    "diffsynth",
    "musubi",
    "comfyui,sdcpp",
    "all@all",
)


def _report(paths: list[Path], target: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    kw = {k: v for k, v in kwargs.items() if k != "target"}
    with load_checkpoint([str(p) for p in paths]) as ck:
        return check_checkpoint(ck, target=target, **kw).to_json()


def _compare(paths: list[Path], kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> int:
    targets = (*TARGETS, *([kwargs["target"]] if "target" in kwargs else []))
    fast = [_report(paths, t, kwargs) for t in targets]
    every = engine.checks_for
    with monkeypatch.context() as m:
        m.setattr(engine, "checks_for", lambda keys: every(None))
        slow = [_report(paths, t, kwargs) for t in targets]
    for t, a, b in zip(targets, fast, slow, strict=True):
        assert a == b, f"target {t}: the report differs when untargeted checks are skipped"
    return sum(len(doc["diagnostics"]) for doc in fast)


def test_the_skip_leaves_out_untargeted_runtimes() -> None:
    hooks = {rt.name: rt.checks for rt in runtimes() if rt.checks}
    assert engine.checks_for(None) == tuple(hooks.values())
    default = engine.checks_for(("sglang", "comfyui"))
    assert default == (hooks["sglang"], hooks["comfyui"])
    # forge-neo follows comfyui (based_on): comfyui's checks run for it anyway
    assert engine.checks_for(("forge-neo@all",)) == (*default, hooks["forge-neo"])
    assert engine.checks_for(("sdcpp@all", "musubi")) == (
        *default,
        hooks["sdcpp"],
        hooks["musubi"],
    )


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.safetensors")))
def test_example_reports_are_identical(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare([EXAMPLES / name], {}, monkeypatch)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_case_reports_are_identical(
    case: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sub, build in (("bad", case.build), ("twin", case.twin)):
        if build is None:
            continue
        folder = tmp_path / sub
        folder.mkdir()
        _compare(build(folder), case.check_kwargs, monkeypatch)


def _own_findings(paths: list[Path]) -> list[tuple[str, Any]]:
    """(runtime, finding) for every finding a non-default runtime's checks give."""
    out = []
    with load_checkpoint([str(p) for p in paths]) as ck:
        for rt in runtimes():
            if rt.default_target or not rt.checks:
                continue
            checks = load(rt.checks)(ck)
            found = list(checks.file_findings())
            for layer in ck.layers.values():
                found.extend(checks.layer_findings(layer))
            out += [(rt.name, d) for d in found]
    return out


def _reach(name: str) -> set[str]:
    """`name` and every runtime based on it (directly or through others)."""
    by_name = {rt.name: rt for rt in runtimes()}
    out = {name}
    grew = True
    while grew:
        more = {n for n, rt in by_name.items() if rt.based_on in out} - out
        out |= more
        grew = bool(more)
    return out


def _assert_own(paths: list[Path]) -> int:
    found = _own_findings(paths)
    for name, d in found:
        reach = _reach(name)
        others = {t for t in d.targets if t not in reach}
        others |= {t for t in d.affected_releases() if t not in reach and d.affected_releases()[t]}
        assert not others, f"{name}'s {d.code} affects {sorted(others)}: {d.message}"
        assert d.affects_any_release(), f"{name}'s {d.code} is general: {d.message}"
        assert any(d.effective_effects.get(t, Effect.NONE) is not Effect.NONE for t in reach) or (
            d.affected_releases().get(name)
        ), f"{name}'s {d.code} does not affect {name}: {d.message}"
    return len(found)


def test_untargeted_findings_never_concern_other_runtimes(tmp_path: Path) -> None:
    n = sum(_assert_own([p]) for p in sorted(EXAMPLES.glob("*.safetensors")))
    for i, case in enumerate(CASES):
        for sub, build in (("bad", case.build), ("twin", case.twin)):
            if build is None:
                continue
            folder = tmp_path / f"{i}{sub}"
            folder.mkdir()
            n += _assert_own(build(folder))
    assert n > 100  # the runtimes' checks do find things in these files
