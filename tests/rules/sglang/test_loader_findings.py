"""Item 13 of issue 20: a loader that fails or degrades always has findings that say why, and
the target's status is the loader the family picks, else --transformer-weights-path (the one
whose reading does not depend on the model: rules/sglang/loaders.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.rules.sglang.loaders import LOADERS, chosen_loader, verdicts
from quantcheck.runtimes import get_runtime
from quantcheck.runtimes.sglang_releases import LOADER_BY_FAMILY

from ..test_rule_table import CASES

EXAMPLES = sorted((Path(__file__).parents[3] / "examples").glob("*.safetensors"))
KEYS = tuple(f"sglang@{r}" for r in get_runtime("sglang").release_names())


def _assert_backed(paths: list[str]) -> None:
    report = check_paths(paths, target="sglang@all")
    matrix = report.releases["sglang"]["statuses"]
    for key in KEYS:
        st = report.target_status(key)
        # one decision: the release matrix, the status and its counts are the deciding
        # loader's (rules/sglang/loaders.py)
        assert matrix[key.partition("@")[2]] == st["status"], key
        assert (st["status"] == "ok") == (st["errors"] == st["degraded"] == 0), (key, st)
        counted = verdicts(report.diagnostics, key, report.paths[key]["loaders"])
        assert {n: v["status"] for n, v in counted.items()} == {
            n: v["status"] for n, v in st["loaders"].items()
        }
        for name, v in counted.items():
            if v["status"] == "fails":
                assert v["errors"] >= 1, f"{key} {name} fails with no finding"
            if v["status"] == "degraded":
                assert v["degraded"] >= 1, f"{key} {name} degraded with no finding"
        if st["status"] == "fails":  # the deciding loader's counts
            assert st["errors"] >= 1, f"{key} fails with 0 findings"
        assert st["status"] == st["loaders"][st["loader"]]["status"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_failing_loader_of_an_example_has_a_finding(path: Path) -> None:
    _assert_backed([str(path)])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_failing_loader_of_a_rule_case_has_a_finding(case, tmp_path: Path) -> None:
    _assert_backed([str(p) for p in case.build(tmp_path)])


def test_family_picks_its_loader_else_transformer_weights_path() -> None:
    v = {
        "transformer-weights-path": {"status": "fails"},
        "minimax-h3": {"status": "ok"},
        "text-encoder": {"status": "degraded"},
    }
    assert chosen_loader(None, v) == "transformer-weights-path"
    assert chosen_loader("minimax-h3", v) == "minimax-h3"
    assert chosen_loader("T5XXL", v) == "text-encoder"
    assert chosen_loader("no-such-family", v) == "transformer-weights-path"
    # not the worst: the loader whose reading does not depend on the model
    better = {
        **v,
        "transformer-weights-path": {"status": "ok"},
        "comfyui-mode": {"status": "fails"},
    }
    assert chosen_loader(None, better) == "transformer-weights-path"
    # a loader that does not take the family is passed over
    na = {**v, "minimax-h3": {"status": "n/a"}}
    assert chosen_loader("minimax-h3", na) == "transformer-weights-path"
    assert set(LOADER_BY_FAMILY.values()) <= set(LOADERS)


def test_a_known_family_decides_the_report_status(tmp_path: Path) -> None:
    """An INT8 ConvRot file: --transformer-weights-path refuses it (QC631), MiniMax-H3 loads it."""
    from .._build import file, int8

    paths = [str(p) for p in file(int8)(tmp_path)]
    report = check_paths(paths, target="sglang")
    assert report.target_status("sglang")["status"] == "fails"
    assert report.target_status("sglang", "minimax-h3")["status"] == "ok"
    assert report.status("sglang", "minimax-h3") == "ok"
    assert report.status("sglang") == "fails"


def test_every_detected_family_names_its_loader() -> None:
    """The family table of quantcheck's detection (issue 26) and sglang's family -> loader
    table agree on the names: a detected family picks a loader."""
    from quantcheck.families import table

    names = {
        f.name
        for v in vars(table).values()
        if isinstance(v, list | tuple) and v and type(v[0]).__name__ == "Family"
        for f in v
    }
    assert names and names <= set(LOADER_BY_FAMILY), names - set(LOADER_BY_FAMILY)
