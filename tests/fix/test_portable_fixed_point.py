"""One `fix --profile portable` reaches the fixed point: for every example checkpoint and every
rule case (tests/rules/cases*.py) a portable fix can repair, fixing the written output a second
time plans no edit. A fix refused on the first run for a finding its result would show is
refused because the file the run writes shows it, so the second run refuses it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_checkpoint, run_rules, select_diagnostics
from quantcheck.fix.planner import plan_fixes, unrepairable
from quantcheck.io.build import RawTensor
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.rules.levels import Effect
from rules._build import file, fp8, int8, marker, t
from rules.test_rule_table import CASES

from ._util import fix_to

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.safetensors"))
TARGETS = ("all", "all@all")


def _second_run(paths: list[Path], tmp_path: Path, target: str, write: bool = True) -> list[str]:
    """The edits a portable fix of the first portable fix's output plans ([] at the fixed
    point; [] too for an input `fix` refuses as a whole). `write=False` re-plans the first
    plan's output as it would load once written (its planned files) instead of writing it."""
    out = tmp_path / ("out" if len(paths) > 1 else "out.safetensors")
    with load_checkpoint([str(p) for p in paths]) as ck:
        if unrepairable(ck):
            return []
        if write:
            first = fix_to(paths, out, target=target, profile="portable")
        else:
            first = plan_fixes(ck, target=target, profile="portable")
        assert first.converged, [e.description for e in first.edits]
        if not first.changed:
            return []
        if write:
            files = sorted(out.glob("*.safetensors")) if out.is_dir() else [out]
            with load_checkpoint([str(f) for f in files]) as written:
                again = plan_fixes(written, target=target, profile="portable")
        else:
            assert first.final is not None
            again = plan_fixes(first.final, target=target, profile="portable")
    return [f"{e.code} {e.where}: {e.description}" for e in again.edits if e.safety != "rewrite"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_example_portable_fix_is_a_fixed_point(name: str, target: str, tmp_path: Path) -> None:
    assert _second_run([EXAMPLES / name], tmp_path, target) == []


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_case_portable_fix_is_a_fixed_point(case, target: str, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    paths = list(case.build(src))
    assert _second_run(paths, tmp_path, target, write=False) == []


# ----------------------------------------------------------------------------- the verdicts

QKV, OUT, FC1 = (f"model.diffusion_model.blocks.0.{n}" for n in ("attn.qkv", "attn.out", "mlp.fc1"))


def _unmarked(rows: list[RawTensor]) -> list[RawTensor]:
    return [r for r in rows if not r.name.endswith(".comfy_quant")]


#: FP8 and INT8 layers, no header declarations, and a stale FP8 marker on a BF16 layer (QC304):
#: the portable header entries make sglang's header path read the file as one FP8 model
#: whatever QC304's fix does (the flux_broken pattern)
STALE_BESIDE_INT8 = file(
    lambda: [
        *fp8(QKV),
        *int8(OUT, scale=("F32", ()), mark={"format": "int8_tensorwise"}),
        t(f"{FC1}.weight", "BF16", (64, 64)),
        marker(FC1, {"format": "float8_e4m3fn"}),
    ]
)
#: an FP8 layer and an unmarked INT8 one (QC314 adds its marker): the added INT8 marker, not
#: the portable edits, gives sglang a mix of formats it cannot load (QC602)
UNMARKED_INT8_BESIDE_FP8 = file(lambda: [*fp8(QKV), *_unmarked(int8(OUT, scale=("F32", ())))])


def test_a_finding_the_portable_edits_make_anyway_refuses_no_fix(tmp_path: Path) -> None:
    paths = STALE_BESIDE_INT8(tmp_path)
    with load_checkpoint([str(p) for p in paths]) as ck:
        plan = plan_fixes(ck, target="all", profile="portable")
        assert plan.refused == {}
        assert [e.where for e in plan.edits if e.code == "QC304"] == [f"{FC1}.weight"]
        assert plan.final is not None
        sglang = {d.code for d in plan.remaining if d.effect_at("sglang") is not Effect.NONE}
        assert "QC617" in sglang  # the header path: the portable profile's stated choice
        assert any(c.topic == "sglang-header-path" for c in plan.choices)
        again = plan_fixes(plan.final, target="all", profile="portable")
    assert [e.description for e in again.edits if e.safety != "rewrite"] == []


def test_a_fix_whose_own_result_breaks_sglang_is_still_refused(tmp_path: Path) -> None:
    paths = UNMARKED_INT8_BESIDE_FP8(tmp_path)
    with load_checkpoint([str(p) for p in paths]) as ck:
        plan = plan_fixes(ck, target="all", profile="portable")
        why = plan.refused[("QC314", f"{OUT}.weight")]
        # the portable header declarations make --transformer-weights-path (the loader of a
        # DiT of no detected family) read the whole file as FP8: the marked INT8 layer is
        # swept into it (QC617); the marker readers would refuse the mix (QC602)
        assert "sglang would then report QC617" in why
        # the verdict is true: applied for ComfyUI alone, the written file is degraded on sglang
        alone = plan_fixes(ck, target="comfyui", profile="portable")
        assert [e.where for e in alone.edits if e.code == "QC314"] == [f"{OUT}.weight"]
        assert alone.final is not None
        report = check_checkpoint(alone.final, target="sglang")
        after = select_diagnostics(run_rules(alone.final), target="sglang")
    assert report.target_status("sglang")["status"] == "degraded"
    assert any(d.code == "QC617" and d.effect_at("sglang") is Effect.DEGRADED for d in after)
    assert any(d.code == "QC602" and d.effect_at("sglang") is Effect.FAILS for d in after)
