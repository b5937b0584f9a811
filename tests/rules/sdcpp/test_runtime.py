"""stable-diffusion.cpp (`--target sdcpp`): the effects table covers every generic code, the
bundled examples get the verdicts read in its source, its releases differ on scaled FP8, and
its messages round-trip through `explain`. Per-rule failing/passing files: sdcpp/cases.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.lookup import explain
from quantcheck.rules.levels import Effect
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, runtime_names
from quantcheck.runtimes.sdcpp import EFFECTS, LEFT_NONE

from .._build import INT8_CONVROT, P, file, fp8, fp8_with, header_meta, int8, marker, t

OWN = {f"QC74{i}" for i in range(10)} & set(all_rules())
#: examples/ verdicts on the newest modelled release (PR #1913), as read in sd.cpp's source.
EXAMPLES = {
    "awq_w4a16": "fails",  # packed I8 [N, K/2] != Linear [N, K]
    "broken_seeds": "fails",
    "fp8_e4m3fn": "ok",  # PR #1913 applies the scalar scale
    "int8_convrot": "ok",  # I8, F32 [N, 1], group 16 (a power of four dividing K)
    "mxfp8": "degraded",  # U8 block scales skipped, codes used unscaled
    "nvfp4": "fails",  # U8 weights skipped: "not in model metadata"
    "w4a4_convrot": "fails",
    "w4a8_codebook": "fails",
    "w6a8_int8": "fails",
}


def _codes(paths: list[str], target: str = "sdcpp") -> set[str]:
    return {d.code for d in check_paths(paths, target=target).diagnostics}


def test_every_generic_code_has_a_decision() -> None:
    """A new generic code fails this test until someone decides what it does to sd.cpp."""
    generic = {c for c in all_rules() if not c.startswith("QC7")}
    assert set(EFFECTS).isdisjoint(LEFT_NONE)
    assert generic == set(EFFECTS) | set(LEFT_NONE)
    assert all(e is not Effect.NONE for e in EFFECTS.values())
    assert {f"QC74{i}" for i in range(10)} == OWN
    for code, rule in all_rules().items():  # other runtimes' own rules leave sd.cpp alone
        if code.startswith("QC7") and code not in OWN:
            assert rule.effects.get("sdcpp", Effect.NONE) is Effect.NONE, code


def test_runtime_record() -> None:
    rt = get_runtime("sdcpp")
    assert "sdcpp" in runtime_names() and not rt.default_target
    assert rt.release_names() == ("bcc7e295", "2026-08-26")
    assert "bcc7e295" in rt.doc


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_verdicts(name: str, examples_dir: Path) -> None:
    report = check_paths([str(examples_dir / f"{name}.safetensors")], target="sdcpp")
    assert report.target_status("sdcpp")["status"] == EXAMPLES[name]


def test_fp8_white_images_before_pr1913(examples_dir: Path) -> None:
    paths = [str(examples_dir / "fp8_e4m3fn.safetensors")]
    old = check_paths(paths, target="sdcpp@bcc7e295")
    assert old.target_status("sdcpp@bcc7e295")["status"] == "degraded"
    assert "QC741" in {d.code for d in old.diagnostics}
    assert "QC741" not in _codes(paths)  # the newest release applies the scale


def test_default_report_unchanged(examples_dir: Path) -> None:
    """New runtimes' findings never change the default (sglang, ComfyUI) report."""
    for name in EXAMPLES:
        report = check_paths([str(examples_dir / f"{name}.safetensors")])
        assert not any(d.code.startswith("QC74") for d in report.diagnostics), name


def test_target_all_summary_names_sdcpp(examples_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["check", "--target", "all", str(examples_dir / "nvfp4.safetensors")]) == 1
    out = capsys.readouterr().out
    # sglang: --transformer-weights-path infers NVFP4 from the tensors (--comfyui-mode, which
    # cannot fit the packed weights, QC636, does not read this file)
    assert "sdcpp: fails" in out and "sglang: ok" in out


@pytest.mark.parametrize(
    ("shape", "ok"),
    [((64, 1), True), ((64,), True), ((1, 64), True), ((), False), ((1,), False), ((32, 2), False)],
)
def test_int8_scale_shapes(shape: tuple[int, ...], ok: bool, tmp_path: Path) -> None:
    """sd.cpp's Linear holds an F32 [N] scale; [N, 1] is reshaped to it, [1, N] matches."""
    paths = [str(p) for p in file(lambda: int8(scale=("F32", shape)))(tmp_path)]
    assert ("QC744" not in _codes(paths)) is ok


@pytest.mark.parametrize(
    ("group", "ok"), [(4, True), (16, True), (64, True), (8, False), (128, False)]
)
def test_convrot_groups_are_powers_of_four_dividing_k(group: int, ok: bool, tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": group}
    paths = [str(p) for p in file(lambda: int8(mark=mark))(tmp_path)]
    assert ("QC746" not in _codes(paths)) is ok


def test_group_must_divide_k(tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": 256}  # a power of four, K = 64
    paths = [str(p) for p in file(lambda: int8(mark=mark))(tmp_path)]
    report = check_paths(paths, target="sdcpp")
    assert any("does not divide K=64" in d.message for d in report.diagnostics if d.code == "QC746")


def test_header_only_fp8_is_loaded_by_dtype(tmp_path: Path) -> None:
    """sd.cpp ignores the header, but FP8 needs no marker: not QC743, only the scale rule."""
    build = file(lambda: fp8()[:2], header_meta({P: {"format": "float8_e4m3fn"}}))
    paths = [str(p) for p in build(tmp_path)]
    assert "QC743" not in _codes(paths)
    assert "QC741" in _codes(paths, "sdcpp@bcc7e295")


def test_unreadable_dtype_reported_once_per_dtype(tmp_path: Path) -> None:
    build = file(lambda: [*int8(), t("a.mask", "BOOL", (4,)), t("b.mask", "BOOL", (4,))])
    paths = [str(p) for p in build(tmp_path)]
    hits = [d for d in check_paths(paths, target="sdcpp").diagnostics if d.code == "QC747"]
    assert len(hits) == 1 and hits[0].message.startswith("2 tensors are BOOL")


def test_non_u8_marker_fails_sdcpp_only(tmp_path: Path) -> None:
    build = file(fp8_with(marker(P, {"format": "float8_e4m3fn"}, dtype="I8")))
    paths = [str(p) for p in build(tmp_path)]
    report = check_paths(paths, target="all")
    hit = next(d for d in report.diagnostics if d.code == "QC205")
    assert hit.effective_effects["sdcpp"] is Effect.FAILS
    assert hit.effective_effects["comfyui"] is Effect.NONE
    # sd.cpp's table does not hide the general warning from the default report
    assert "QC205" in {d.code for d in check_paths(paths).diagnostics}


def test_explain_round_trip() -> None:
    text = "[ERROR] ComfyUI int8_tensorwise weight is not I8: 'model.diffusion_model.x.weight'\n"
    rendered, ok = explain(text)
    assert ok and "QC748" in rendered and "stable-diffusion.cpp bcc7e295" in rendered
    assert "--target sdcpp" in rendered


def test_string_group_fails_the_marker_parse(tmp_path: Path) -> None:
    mark = {**INT8_CONVROT, "convrot_groupsize": "16"}
    report = check_paths([str(p) for p in file(lambda: int8(mark=mark))(tmp_path)], target="sdcpp")
    hit = next(d for d in report.diagnostics if d.code == "QC746")
    assert "parsing ComfyUI quantization metadata tensor failed" in hit.message
