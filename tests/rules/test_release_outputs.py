"""Release-aware outputs (issue 13): findings labelled with the releases they affect and the
per-release columns of the many-checkpoint outputs (ComfyUI's format steps as release data:
tests/rules/comfyui/test_steps.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantcheck.checking import check_paths
from quantcheck.cli.main import main
from quantcheck.render import sarif, text
from quantcheck.render.many import column_heads
from quantcheck.rules import codes as R
from quantcheck.runtimes import get_runtime, release_label, release_span

from ._build import Build, awq, file, int8, mxfp8, nvfp4
from .sglang.loader_helpers import LOADER_CODES, as_text_encoder

SG = ("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")

#: sglang's loader findings left out where a test is about the marker path's release data (a
#: marked file fails a loader of every release from 0.5.21: --comfyui-mode, QC635-QC637)
IGNORE_LOADERS = ["--ignore", ",".join(sorted(LOADER_CODES))]


def _paths(build: Build, where: Path) -> list[str]:
    where.mkdir(parents=True, exist_ok=True)
    return [str(p) for p in build(where)]


def _lines(out: str, code: str) -> list[str]:
    return [line for line in out.splitlines() if f" {code} " in line]


# --- the words for a set of releases ---------------------------------------------------------


@pytest.mark.parametrize(
    ("hit", "span", "label"),
    [
        ({"0.5.19"}, "0.5.19", "sglang@0.5.19"),
        ({"0.5.18", "0.5.19", "0.5.20", "0.5.21"}, "≤0.5.21", "sglang ≤0.5.21"),
        ({"0.5.20", "0.5.21", "0.5.22", "0.5.23"}, "≥0.5.20", "sglang ≥0.5.20"),
        ({"0.5.19", "0.5.20", "0.5.21"}, "0.5.19–0.5.21", "sglang 0.5.19–0.5.21"),
        ({"0.5.18", "0.5.20", "0.5.21", "0.5.22", "0.5.23"}, "0.5.18, ≥0.5.20", None),
        (set(SG), "≤0.5.23", "sglang"),
    ],
)
def test_release_span_and_label(hit: set[str], span: str, label: str | None) -> None:
    assert release_span(SG, hit) == span
    if label is not None:
        assert release_label("sglang", SG, hit) == label


# --- labels on diagnostic lines ----------------------------------------------------------------


def test_release_only_findings_are_labelled_with_their_releases(tmp_path: Path) -> None:
    # text encoders: sglang's text-encoder loader reads the markers (a DiT's
    # --transformer-weights-path does not: tests/rules/sglang/test_one_decision.py)
    paths = _paths(file(as_text_encoder(nvfp4)), tmp_path / "a") + _paths(
        file(as_text_encoder(mxfp8)), tmp_path / "b"
    )
    out = "\n".join(text.render(check_paths([p], target="sglang@all"), False) for p in paths)
    assert _lines(out, "QC614") and all(
        line.endswith("[sglang@0.5.19]") for line in _lines(out, "QC614")
    )
    assert _lines(out, "QC611")[0].endswith("[sglang@0.5.18]")
    assert _lines(out, "QC615")[0].endswith("[sglang 0.5.19–0.5.21, 0.5.23]")


def test_a_finding_on_every_release_keeps_the_runtime_name(tmp_path: Path) -> None:
    paths = _paths(file(awq), tmp_path)
    out = text.render(check_paths(paths, target="sglang@all"), False)
    assert _lines(out, "QC601") and all(line.endswith("[sglang]") for line in _lines(out, "QC601"))


def test_default_report_lines_are_unchanged(tmp_path: Path) -> None:
    """Without release targets a label is the runtime list it always was, even for a finding
    whose effect differs between releases (QC318 fails sglang >= 0.5.20 only)."""
    paths = _paths(file(lambda: nvfp4(mark={"format": "nvfp4", "convrot": True})), tmp_path)
    report = check_paths(paths)
    for d in report.diagnostics:
        assert d.target_labels(report.targets) == [t for t in d.targets if t in report.targets]
    hit = [d for d in report.diagnostics if d.code == R.QC318.code]
    assert hit and hit[0].release_effects()  # differs between releases, still labelled plainly
    # the marker readers' finding (--transformer-weights-path's NVFP4 inference reads none)
    assert _lines(text.render(report, False), "QC318")[0].endswith(
        "[sglang (only with MiniMax-H3's loader, --comfyui-mode or the text-encoder loader)]"
    )


def test_labels_in_json_and_sarif(tmp_path: Path) -> None:
    paths = _paths(file(nvfp4), tmp_path)
    report = check_paths(paths, target="sglang@0.5.19")
    doc = next(d for d in report.to_json()["diagnostics"] if d["code"] == R.QC614.code)
    assert doc["releases"] == {"sglang": ["0.5.19"]}
    assert doc["release_effects"]["sglang"]["0.5.19"] == "fails"
    result = next(
        r for r in json.loads(sarif.render(report))["runs"][0]["results"] if r["ruleId"] == "QC614"
    )
    assert result["properties"]["releases"] == {"sglang": ["0.5.19"]}
    assert result["properties"]["labels"] == ["sglang@0.5.19"]


# --- the many-checkpoint outputs with releases ------------------------------------------------


def _two(tmp_path: Path) -> list[str]:
    """Two text encoders (their marker path decides sglang's verdict): NVFP4 and INT8."""
    return _paths(file(as_text_encoder(nvfp4)), tmp_path / "a") + _paths(
        file(as_text_encoder(int8)), tmp_path / "b"
    )


def test_column_heads_group_releases_under_their_runtime() -> None:
    groups, heads = column_heads(("sglang@0.5.18", "sglang@0.5.19", "comfyui", "comfyui@v0.8"))
    assert groups == ["SGLANG", "", "", "COMFYUI"]
    assert heads == ["0.5.18", "0.5.19", "COMFYUI", "v0.8"]
    assert column_heads(("sglang", "comfyui")) == (["", ""], ["SGLANG", "COMFYUI"])


def test_table_with_releases_has_a_runtime_line_over_release_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _two(tmp_path)
    main(["check", "-q", "--no-color", *IGNORE_LOADERS, "--target", "sglang@all", *paths])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["SGLANG"]
    assert lines[1].split() == ["CHECKPOINT", "SIZE", "FORMATS", *SG]
    # the runtime name sits over the first release column
    assert lines[0].index("SGLANG") == lines[1].index("0.5.18")
    nvfp4_row = next(line for line in lines if "nvfp4" in line).split()
    assert nvfp4_row[-6:] == ["ok", "fails", "ok", "ok", "ok", "ok"]
    main(["check", "-q", "--no-color", *paths])
    assert capsys.readouterr().out.splitlines()[0].split()[-2:] == ["SGLANG", "COMFYUI"]


def test_json_sarif_github_carry_per_release_statuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _two(tmp_path)
    main(["check", "--output-format", "json", *IGNORE_LOADERS, "--target", "sglang@all", *paths])
    doc = json.loads(capsys.readouterr().out)
    nv = next(c for c in doc["checkpoints"] if "nvfp4" in c["formats"])
    assert nv["targets"]["sglang@0.5.19"]["status"] == "fails"
    assert nv["releases"]["sglang"]["needs"] == "0.5.20"
    assert doc["targets"]["sglang@0.5.18"]["status"] == "fails"  # the INT8 file there
    assert doc["releases"]["sglang"]["needs"] == "0.5.20"  # every checkpoint loads from there
    main(["check", "--output-format", "sarif", *IGNORE_LOADERS, "--target", "sglang@all", *paths])
    props = json.loads(capsys.readouterr().out)["runs"][0]["properties"]
    per = {Path(c["checkpoint"]).parent.name: c for c in props["checkpoints"]}
    assert per["a"]["targets"]["sglang@0.5.19"] == "fails"
    assert per["b"]["targets"]["sglang@0.5.18"] == "fails"
    assert per["b"]["releases"]["sglang"]["needs"] == "0.5.19"
    main(["check", "--output-format", "github", *IGNORE_LOADERS, "--target", "sglang@all", *paths])
    notices = [x for x in capsys.readouterr().out.splitlines() if x.startswith("::notice")]
    assert len(notices) == 2 and any("sglang needs >= 0.5.20" in x for x in notices)
    main(["check", "--output-format", "github", *paths])  # default targets: no notices
    assert "::notice" not in capsys.readouterr().out


def test_html_index_groups_release_columns_and_says_what_each_needs(tmp_path: Path) -> None:
    from quantcheck.model.discover import discover
    from quantcheck.render.html.index import build_pages

    paths = _two(tmp_path)
    pages = build_pages(discover(paths), target="sglang@all,comfyui", generated="x")
    index = pages["index.html"]
    assert '<th colspan="6">sglang</th>' in index
    assert "<th>0.5.19</th>" in index and "<th>comfyui</th>" in index
    assert "<th>sglang needs</th>" in index
    # every marked file fails a loader of sglang 0.5.21+ (--comfyui-mode): no release column
    # says a "needs" for them (the marker path's needs: the other tests of this file)
    assert "<td" in index and "sglang needs" in index
    plain = build_pages(discover(paths), generated="x")["index.html"]
    assert "needs</th>" not in plain and 'colspan="6"' not in plain


def test_html_page_labels_findings_with_their_releases(tmp_path: Path) -> None:
    from quantcheck.render.html import build_report

    paths = _paths(file(as_text_encoder(nvfp4)), tmp_path)
    html = build_report(paths, target="sglang@all", generated="x")
    assert 'class="targets">sglang@0.5.19<' in html


def test_docs_and_explain_give_effects_per_release() -> None:
    from quantcheck.rules.docs import rules_markdown
    from quantcheck.runtimes import release_summary

    assert release_summary(get_runtime("comfyui"), "QC610", R.QC610.effects) == "fails ≤0271a469"
    assert release_summary(get_runtime("sglang"), "QC318", R.QC318.effects) == (
        "degraded 0.5.18, none 0.5.19"
    )
    assert release_summary(get_runtime("sglang"), "QC601", R.QC601.effects) == ""
    assert "| none | none (fails ≤0271a469) |" in rules_markdown()
    assert "comfyui: none (fails ≤0271a469)" in R.QC610.doc()
