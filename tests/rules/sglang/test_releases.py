"""Runtime releases (issue 13): targets with releases, per-release verdicts ("needs >= X"),
release-aware fixes and both generations of sglang's INT8 messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.explain.messages import match_message
from quantcheck.fix.planner import plan_fixes
from quantcheck.model.checkpoint import load_checkpoint
from quantcheck.render import sarif, text
from quantcheck.render.html import build_report
from quantcheck.rules import codes as R
from quantcheck.rules.registry import all_rules
from quantcheck.runtimes import get_runtime, parse_target, runtimes, targets_of

from .._build import Build, P, file, fp8, header_meta, int8, mxfp8, nvfp4, rowwise

FC1 = "blocks.0.mlp.fc1"
OVERRIDE = "transformer-weights-path"

SGLANG = ("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
FPMM = {"format": "nvfp4", "full_precision_matrix_mult": True}
ROT_NVFP4 = {"format": "nvfp4", "convrot": True, "full_precision_matrix_mult": True}
PLAIN_INT8 = {"format": "int8_tensorwise"}

#: (build, sglang's marker-path status per release oldest first (the text-encoder loader's
#: order; 0.5.18: its transformer loader), `needs` of that path)
MATRIX: dict[str, tuple[Build, str, str | None]] = {
    "fp8-header-declared": (
        file(fp8, header_meta({P: {"format": "float8_e4m3fn"}})),
        "ok ok ok ok ok ok",
        "0.5.18",
    ),
    "int8-convrot": (file(int8), "fails ok ok ok ok ok", "0.5.19"),
    "convrot-plus-plain-embedding": (
        file(lambda: [*int8(), *int8("embed_tokens", mark=PLAIN_INT8)]),
        "fails fails ok ok ok ok",
        "0.5.20",
    ),
    "header-and-tensor-marker-complementary": (
        file(int8, header_meta({P: {"format": "int8_tensorwise"}})),
        "fails fails ok ok ok ok",
        "0.5.20",
    ),
    # 0.5.18 finds NVFP4 layers from their tensors (ModelOpt), markers or not
    "nvfp4-plain": (file(nvfp4), "ok fails ok ok ok ok", "0.5.20"),
    "nvfp4-fpmm": (file(lambda: nvfp4(mark=FPMM)), "ok ok ok ok ok ok", "0.5.18"),
    "nvfp4-rotated": (
        file(lambda: nvfp4(mark=ROT_NVFP4)),
        "degraded ok fails fails fails fails",
        None,
    ),
    # QC615: 0.5.19-0.5.21 and 0.5.23 stop at weight load; only 0.5.22 loads it
    "mxfp8": (file(mxfp8), "fails fails fails fails ok fails", None),
}


#: the target's status per release: its deciding loader's, `--transformer-weights-path` while
#: the model family is not detected (rules/sglang/loaders.py): it refuses marker-only files
#: from 0.5.19 (QC631; 0.5.18 reads no markers, QC611), builds its whole-model FP8 config from
#: a header declaration, and infers NVFP4 from the tensors, ignoring convrot (QC633)
DECIDING: dict[str, str] = {
    "fp8-header-declared": "ok ok ok ok ok ok",
    "int8-convrot": "fails fails fails fails fails fails",
    "convrot-plus-plain-embedding": "fails fails fails fails fails fails",
    "header-and-tensor-marker-complementary": "fails fails fails fails fails fails",
    "nvfp4-plain": "ok ok ok ok ok ok",
    "nvfp4-fpmm": "ok ok ok ok ok ok",
    "nvfp4-rotated": "degraded degraded degraded degraded degraded degraded",
    "mxfp8": "fails fails fails fails fails fails",
}


def _paths(build: Build, tmp_path: Path) -> list[str]:
    return [str(p) for p in build(tmp_path)]


def test_release_effects_name_registered_rules() -> None:
    rules = all_rules()
    for rt in runtimes():
        for rel in rt.releases:
            assert set(rel.effects) <= set(rules), (rt.name, rel.name)


def test_every_sglang_release_is_a_target() -> None:
    assert get_runtime("sglang").release_names() == SGLANG
    for name in SGLANG:
        assert parse_target(f"sglang@{name}") == f"sglang@{name}"
    assert targets_of("sglang") == ("sglang",)
    assert targets_of("sglang@all") == tuple(f"sglang@{n}" for n in SGLANG)
    newest_comfyui = f"comfyui@{get_runtime('comfyui').newest.name}"
    assert set(targets_of("all@all")) >= {"sglang@0.5.18", newest_comfyui}
    for bad in ("sglang@0.5.17", "vllm", "sglang@"):
        with pytest.raises(ValueError):
            parse_target(bad)


def test_bare_name_is_the_newest_release(tmp_path: Path) -> None:
    paths = _paths(file(lambda: nvfp4(mark=ROT_NVFP4)), tmp_path)
    bare = check_paths(paths, target="sglang").target_status("sglang")
    newest = check_paths(paths, target="sglang@0.5.23").target_status("sglang@0.5.23")
    # --transformer-weights-path's inferred ModelOpt config ignores convrot (QC633); the
    # marker readers refuse rotated NVFP4 from 0.5.20
    assert bare == newest and bare["status"] == "degraded"
    assert bare["loaders"]["text-encoder"]["status"] == "fails"


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_release_matrix(case: str, tmp_path: Path) -> None:
    build, statuses, needs = MATRIX[case]
    report = check_paths(_paths(build, tmp_path))
    entry = report.releases["sglang"]
    assert " ".join(entry["statuses"].values()) == DECIDING[case]
    assert list(entry["statuses"]) == list(SGLANG)
    # each release as a target agrees with the matrix; its marker path with MATRIX
    marker_path = []
    for name, status in entry["statuses"].items():
        one = check_paths(_paths(build, tmp_path), target=f"sglang@{name}")
        st = one.target_status(f"sglang@{name}")
        assert st["status"] == status, name
        loaders = st["loaders"]
        marker_path.append((loaders.get("text-encoder") or loaders[OVERRIDE])["status"])
    assert " ".join(marker_path) == statuses
    ok_from = [n for i, n in enumerate(SGLANG) if all(x == "ok" for x in marker_path[i:])]
    assert (ok_from[0] if ok_from else None) == needs


def test_release_only_findings_stay_out_of_the_newest_report(tmp_path: Path) -> None:
    paths = _paths(file(nvfp4), tmp_path)
    newest = check_paths(paths)
    assert R.QC614.code not in {d.code for d in newest.diagnostics}
    # the loaders that cannot load NVFP4 (--comfyui-mode) do not read this file: notes
    assert newest.exit_code() == 0
    assert {d.code for d in newest.diagnostics if d.data.get("decides") is False} == {
        "QC636",
        "QC637",
    }
    old = check_paths(paths, target="sglang@0.5.19")
    qc614 = [d for d in old.diagnostics if d.code == R.QC614.code]
    # 0.5.19's marker inspector wants full_precision_matrix_mult; --transformer-weights-path
    # infers NVFP4 from the tensors and never reads the markers
    assert qc614 and qc614[0].data["read_by"] == ["minimax-h3", "text-encoder"]
    assert old.target_status("sglang@0.5.19")["loaders"]["text-encoder"]["status"] == "fails"
    assert old.exit_code() == 0


def test_outputs_carry_the_matrix(tmp_path: Path) -> None:
    paths = _paths(file(lambda: nvfp4(mark=ROT_NVFP4)), tmp_path)
    report = check_paths(paths)
    doc = report.to_json()
    assert doc["schema_version"] == 1
    # 0.5.18 degraded (ModelOpt ignores convrot); 0.5.19 degraded: --transformer-weights-path
    # infers the same ModelOpt config (QC633); 0.5.20+ refuse rotated NVFP4
    assert doc["releases"]["sglang"]["oldest_ok"] is None
    assert doc["releases"]["sglang"]["needs"] is None
    assert "comfyui" not in doc["releases"] or len(get_runtime("comfyui").releases) > 1
    assert "releases: sglang: no modelled release loads it correctly" in text.render(report, False)
    run = json.loads(sarif.render(report))["runs"][0]
    assert run["properties"]["releases"]["sglang"]["statuses"]["0.5.19"] == "degraded"
    html = build_report(paths, generated="x")
    assert '<section id="releases">' in html and "0.5.22" in html


def test_text_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths(file(nvfp4), tmp_path)
    # --transformer-weights-path infers NVFP4 on every release; --comfyui-mode (0.5.21+)
    # cannot fit the packed weights (QC636), but does not decide
    assert main(["check", "--no-color", *paths]) == 0
    out = capsys.readouterr().out
    assert "releases: sglang: loads on every modelled release (0.5.18 ok · 0.5.19 ok" in out
    assert "--comfyui-mode would fail: QC636, QC637" in out


def test_cli_rejects_unknown_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _paths(file(nvfp4), tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["check", "--target", "sglang@0.4", *paths])
    assert exc.value.code == 2
    assert "sglang models 0.5.18" in capsys.readouterr().err


def _fixed_for(build: Build, tmp_path: Path, target: str) -> list[str]:
    with load_checkpoint(_paths(build, tmp_path)) as ck:
        plan = plan_fixes(ck, target=target)
        return [e.code for e in plan.edits]


def test_fix_for_0519_sets_full_precision_matrix_mult(tmp_path: Path) -> None:
    assert _fixed_for(file(nvfp4), tmp_path, "sglang@0.5.19") == [R.QC614.code]
    assert _fixed_for(file(nvfp4), tmp_path, "sglang") == []


def test_fix_for_0519_makes_markers_identical(tmp_path: Path) -> None:
    build = file(int8, header_meta({P: {"format": "int8_tensorwise"}}))
    assert R.QC612.code in _fixed_for(build, tmp_path, "sglang@0.5.19")
    assert _fixed_for(build, tmp_path, "sglang") == []


def test_fix_cli_for_0519_loads_there(tmp_path: Path) -> None:
    src = _paths(file(nvfp4), tmp_path)
    out = tmp_path / "out.safetensors"
    assert main(["fix", "--target", "sglang@0.5.19", *src, "-o", str(out)]) == 0
    report = check_paths([str(out)], target="sglang@0.5.19")
    assert report.target_status("sglang@0.5.19")["status"] == "ok"


def test_plain_int8_embedding_gets_no_convrot_claim(tmp_path: Path) -> None:
    """convrot: true would claim rotated weights: only a marker naming its group size gets it."""
    plain = file(lambda: [*int8(), *int8("embed_tokens", mark=PLAIN_INT8)])
    with load_checkpoint(_paths(plain, tmp_path)) as ck:
        assert not plan_fixes(ck, target="sglang@0.5.19", unsafe=True).edits
    lost = file(
        lambda: [*int8(), *int8(FC1, mark={"format": "int8_tensorwise", "convrot_groupsize": 16})]
    )
    sub = tmp_path / "lost"
    sub.mkdir()
    with load_checkpoint(_paths(lost, sub)) as ck:
        edits = plan_fixes(ck, target="sglang@0.5.19", unsafe=True).edits
    assert [e.code for e in edits] == [R.QC613.code]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("ValueError: Serialized kitchen_int8 layer 'embed_tokens' must set convrot=true", "QC613"),
        ("ValueError: Serialized convrot_int8 layer 'x' must set convrot=true", "QC218"),
        (
            "Serialized kitchen_int8 layer 'x' must declare convrot_groupsize in (16, 64, 256), "
            "got None",
            "QC219",
        ),
        (
            "Serialized convrot_int8 layer 'x' must declare convrot_groupsize in (16, 64, 256), "
            "got None",
            "QC219",
        ),
        (
            "ValueError: Comfy NVFP4 layer 'blocks.0' must request full_precision_matrix_mult",
            "QC614",
        ),
    ],
)
def test_explain_knows_both_message_generations(message: str, code: str) -> None:
    hit = match_message(message)
    assert hit is not None and hit.code == code


def test_explain_says_when_a_release_model_is_a_guess() -> None:
    assert "[GUESS]" in R.QC611.evidence
    hit = match_message("Serialized kitchen_int8 layer 'x' must set convrot=true")
    assert hit is not None and hit.to_json()["guess"] is False
    assert "--target sglang@0.5.19" in hit.render()


def test_sarif_from_the_cli_has_the_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "a", tmp_path / "b"
    one.mkdir()
    two.mkdir()
    # NVFP4 loads on every release; rowwise FP8 is read as whole-model FP8 before 0.5.23
    paths = _paths(file(nvfp4), one) + _paths(rowwise(), two)
    main(["check", "--output-format", "sarif", *paths])
    run = json.loads(capsys.readouterr().out)["runs"][0]
    entry = run["properties"]["releases"]["sglang"]
    assert entry["statuses"]["0.5.22"] == "degraded"  # the worst of the two checkpoints
    assert entry["statuses"]["0.5.23"] == "ok"
    assert entry["needs"] == "0.5.23"
