"""sglang's header path: which reader takes a file per release (`path` in the JSON summary),
marker findings it hides, and the RowwiseFp8Error messages `explain` knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.explain.messages import match_message
from quantcheck.render.json_out import render

from .._build import (
    INT8_CONVROT,
    Build,
    P,
    file,
    fp8,
    header_meta,
    int8,
    nvfp4,
    rowwise,
)

FC1 = "blocks.0.mlp.fc1"
FP8_MARK = {"format": "float8_e4m3fn"}
OLD = ("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22")

#: the loader that reads only the header path (rules/sglang/loaders.py)
OVERRIDE = "transformer-weights-path"


def _paths(build: Build, tmp: Path) -> dict[str, dict[str, str]]:
    tmp.mkdir(exist_ok=True)
    paths = [str(p) for p in build(tmp)]
    report = check_paths(paths, target="sglang@all")
    return {key.partition("@")[2]: st for key, st in report.to_json()["targets"].items()}


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (file(fp8, header_meta({P: FP8_MARK})), {r: "header" for r in (*OLD, "0.5.23")}),
        (file(fp8), {"0.5.18": "none", **{r: "markers" for r in (*OLD[1:], "0.5.23")}}),
        (file(nvfp4), {"0.5.18": "header", **{r: "markers" for r in (*OLD[1:], "0.5.23")}}),
        (rowwise(), {r: "header" for r in (*OLD, "0.5.23")}),
    ],
    ids=["fp8-header", "fp8-markers", "nvfp4-tensors", "rowwise"],
)
def test_path_per_release(build: Build, expected: dict[str, str], tmp_path: Path) -> None:
    got = _paths(build, tmp_path)
    assert {rel: st["path"] for rel, st in got.items()} == expected
    assert all(st["path_reason"] for st in got.values())


def test_path_names_the_config_per_release(tmp_path: Path) -> None:
    got = _paths(rowwise(), tmp_path)
    assert got["0.5.23"]["path_config"] == "RowwiseFp8Config"
    assert {got[r]["path_config"] for r in OLD} == {"Fp8Config"}
    assert "handle_fp8_metadata_format" in got["0.5.22"]["path_reason"]
    nv = _paths(file(nvfp4), tmp_path / "nv")
    assert nv["0.5.18"]["path_config"] == "ModelOptFp4Config"
    assert "path_config" not in nv["0.5.19"]


def test_json_summary_has_path_for_sglang_only(tmp_path: Path) -> None:
    paths = [str(p) for p in file(fp8, header_meta({P: FP8_MARK}))(tmp_path)]
    doc = json.loads(render(check_paths(paths)))
    assert doc["targets"]["sglang"]["path"] == "header"
    assert doc["targets"]["sglang"]["loaders"][OVERRIDE]["status"] == "ok"
    assert "path" not in doc["targets"]["comfyui"]


def test_header_path_hides_the_marker_path(tmp_path: Path) -> None:
    """FP8 + INT8: the marker resolver refuses the mix (QC602); with a float8 header the header
    path takes the file first (whole-model Fp8Config: a scalar-scaled INT8 layer loads
    value-cast, degraded, QC617) and never gets there."""
    layers = lambda: [*fp8(), *int8(FC1, scale=("F32", ()))]  # noqa: E731
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    markers_only = check_paths([str(p) for p in file(layers)(tmp_path / "a")])
    assert "QC602" in {d.code for d in markers_only.diagnostics}
    assert markers_only.target_status("sglang")["loaders"]["text-encoder"]["status"] == "fails"
    header = file(layers, header_meta({P: FP8_MARK, FC1: INT8_CONVROT}))
    report = check_paths([str(p) for p in header(tmp_path / "b")])
    codes = {d.code for d in report.diagnostics}
    assert {"QC616", "QC617"} <= codes
    # QC602 now concerns only the loaders that read the markers whatever the header says
    assert all(
        d.data.get("loaders") == ["minimax-h3", "comfyui-mode"]
        for d in report.diagnostics
        if d.code == "QC602"
    )
    loaders = report.target_status("sglang")["loaders"]
    assert loaders[OVERRIDE]["status"] == loaders["text-encoder"]["status"] == "degraded"
    assert loaders["minimax-h3"]["status"] == "fails"


def test_hidden_findings_keep_their_effect_on_other_runtimes(tmp_path: Path) -> None:
    """QC222 (a header name with a model prefix the tensors lack) degrades ComfyUI whatever
    sglang reads."""
    build = file(
        lambda: [*fp8()[:-1], *fp8(FC1)],
        header_meta({f"model.diffusion_model.{P}": FP8_MARK, FC1: FP8_MARK}),
    )
    report = check_paths([str(p) for p in build(tmp_path)])
    hits = [d for d in report.diagnostics if d.code == "QC222"]
    assert hits
    # on sglang they concern only the loaders that read the markers first
    assert {tuple(d.data.get("loaders", ())) for d in hits} == {("minimax-h3", "comfyui-mode")}
    assert report.target_status("sglang")["loaders"][OVERRIDE]["status"] == "ok"
    assert {d.effect_at("comfyui").value for d in hits} != {"none"}


def test_rowwise_is_not_an_unknown_format(tmp_path: Path) -> None:
    report = check_paths([str(p) for p in rowwise()(tmp_path)], target="sglang")
    codes = {d.code for d in report.diagnostics}
    assert "QC213" not in codes
    assert report.target_status("sglang")["loaders"][OVERRIDE]["status"] == "ok"


def test_rowwise_format_as_tensor_marker_stays_unknown(tmp_path: Path) -> None:
    """sglang's rowwise path reads the header only: as a .comfy_quant marker it is unknown."""
    build = file(lambda: fp8(mark={"format": "rowwise-float8_e4m3fn"}))
    codes = {d.code for d in check_paths([str(p) for p in build(tmp_path)]).diagnostics}
    assert "QC213" in codes and "QC620" not in codes


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            "RowwiseFp8Error: unsupported quantization format_version '1.0'; expected one of "
            "['1.1']",
            "QC621",
        ),
        ("RowwiseFp8Error: unknown quant format 'nvfp4' for layer 'blocks.1.attn.qkv'", "QC622"),
        (
            "RowwiseFp8Error: missing quant_configs['rowwise-float8_e4m3fn'] layout descriptor",
            "QC622",
        ),
        (
            "RowwiseFp8Error: blocks.0.attn.qkv.weight_scale: row-wise scale must have shape "
            "[64], got [64, 1]",
            "QC623",
        ),
        (
            "RowwiseFp8Error: unexpected quantization tensor 'blocks.0.mlp.fc1.weight_scale' for "
            "a non-FP8 layer",
            "QC623",
        ),
    ],
)
def test_explain_knows_rowwise_errors(message: str, code: str) -> None:
    found = match_message(message)
    assert found is not None and found.code == code


def test_cli_json_top_level_path_when_checkpoints_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from quantcheck.cli.main import main

    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    header = file(fp8, header_meta({P: FP8_MARK}))
    both = [str(header(a)[0]), str(header(b)[0])]
    main(["check", "--output-format", "json", *both])
    doc = json.loads(capsys.readouterr().out)
    assert doc["targets"]["sglang"]["path"] == "header"
    assert [e["targets"]["sglang"]["path"] for e in doc["checkpoints"]] == ["header", "header"]
    mixed = [both[0], str(file(fp8)(c)[0])]
    main(["check", "--output-format", "json", *mixed])
    doc = json.loads(capsys.readouterr().out)
    assert "path" not in doc["targets"]["sglang"]
    assert [e["targets"]["sglang"]["path"] for e in doc["checkpoints"]] == ["header", "markers"]


def test_header_fp8_config_fails_layers_it_cannot_load(tmp_path: Path) -> None:
    """Issue 20 item 17: the whole-model Fp8Config registers a [1] per-tensor scale and an
    [N, K] float8_e4m3fn weight; an INT8 row scale [N, 1] or a packed NVFP4 layer fails at
    weight load (QC630, fails: main said degraded), a scalar-scaled INT8 / BF16 / E5M2 weight
    loads value-cast (QC617, degraded)."""
    cases = {
        "int8-row": ([*fp8(), *int8(FC1)], "fails", "QC630"),
        "nvfp4": ([*fp8(), *nvfp4(FC1)], "fails", "QC630"),
        "fp8-row": (fp8(scale=("F32", (64, 1))), "fails", "QC630"),
        "int8-scalar": ([*fp8(), *int8(FC1, scale=("F32", ()))], "degraded", "QC617"),
        "bf16-scalar": ([*fp8(), *fp8(FC1, weight="BF16")], "degraded", "QC617"),
    }
    for name, (tensors, status, code) in cases.items():
        (tmp_path / name).mkdir()
        build = file(lambda tensors=tensors: tensors, header_meta({P: FP8_MARK}))
        report = check_paths([str(p) for p in build(tmp_path / name)], target="sglang@all")
        assert all(
            report.target_status(t)["loaders"][OVERRIDE]["status"] == status for t in report.targets
        ), name
        assert code in {d.code for d in report.diagnostics}, name
