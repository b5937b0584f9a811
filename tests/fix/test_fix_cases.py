"""Every fixable rule case round-trips: broken -> fix -> clean for the target; fixes converge;
tensors no fix touches are byte-identical to the input; the input is never modified."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.cli.main import main
from quantcheck.fix.planner import unrepairable
from quantcheck.model.checkpoint import load_checkpoint
from rules.cases import CASES

from ._util import fix_to, leftovers, sha, tensor_bytes


def _fixable_cases() -> list[object]:
    return [c for c in CASES if c.code[:3] in ("QC2", "QC3", "QC6", "QC5", "QC1")]


@pytest.mark.parametrize("target,unsafe", [("all", False), ("sglang", True), ("comfyui", True)])
@pytest.mark.parametrize("case", _fixable_cases(), ids=lambda c: c.id)
def test_case_round_trips(case, target: str, unsafe: bool, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    paths = case.build(src)
    with load_checkpoint([str(p) for p in paths]) as ck:
        refuse = bool(unrepairable(ck))
    if refuse:  # a rewrite would lose data: fix refuses with exit 2 and writes nothing
        before = {p: sha(p) for p in paths}
        assert (
            main(
                ["fix", *map(str, paths), "-o", str(tmp_path / "o.safetensors"), "--target", target]
            )
            == 2
        )
        assert not (tmp_path / "o.safetensors").exists()
        assert {p: sha(p) for p in paths} == before
        return
    before = {p: sha(p) for p in paths}
    out = tmp_path / (
        "out" if len(paths) > 1 or any(p.suffix == ".json" for p in paths) else "out.safetensors"
    )
    plan = fix_to(paths, out, target, unsafe)
    assert {p: sha(p) for p in paths} == before, "the input changed"
    outs = [str(out)]
    assert leftovers(outs, target, unsafe) == []
    old = tensor_bytes([str(p) for p in paths])
    new = tensor_bytes(outs)
    touched = {e.layer or e.where for e in plan.edits}
    for name, value in new.items():
        if name in old and not any(name == w or name.startswith(w + ".") for w in touched):
            assert old[name] == value, f"{name} changed although no fix touched it"
